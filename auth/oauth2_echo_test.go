package auth_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/plugins"
)

// TestOAuth2EchoMasked: a token endpoint that echoes the request — the
// Authorization header (Basic base64(escape(id):escape(secret))), the
// form body with client_secret, the secret itself in every escape style —
// puts no form of the secret into Apply's error. The client id, an
// identifier, stays readable on its own.
func TestOAuth2EchoMasked(t *testing.T) {
	const id, secret = "client-app", "cs/secret+é=1 x"
	tests := []struct {
		name      string
		authStyle string
		// body builds the answer from what the endpoint received.
		body func(authz, form string) string
	}{
		{"header, body echoed", "", func(authz, form string) string {
			return `{"seen":"` + authz + `","secret":"` + phpSlashes(secret) + `","client":"` + id + `"}`
		}},
		{"params, form echoed", "params", func(authz, form string) string {
			return `{"form":"` + jsonWith(form, true, true, false) + `","client":"` + id + `"}`
		}},
		{"header, all \\u", "", func(authz, form string) string {
			return `{"authz":"` + allU(authz, "%04X") + `","secret":"` + allU(secret, "%04x") + `","client":"` + id + `"}`
		}},
		{"params, in error_description", "params", func(authz, form string) string {
			return `{"error":"invalid_client","error_description":"` + jsonWith(form, true, false, false) + ` ` + id + `"}`
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				form, _ := io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, tt.body(r.Header.Get("Authorization"), string(form)))
			}))
			defer ts.Close()
			cfg := plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{
				TokenURL: ts.URL, ClientID: "CID", ClientSecret: "CS", AuthStyle: tt.authStyle}}
			a := auth.NewAuthenticator(egresstest.Client(t))
			_, err := a.Apply(t.Context(), cfg, map[string]string{"CID": id, "CS": secret}, httptest.NewRequest(http.MethodGet, "http://api.example/", nil))
			if err == nil {
				t.Fatal("Apply succeeded against a failing endpoint")
			}
			msg := err.Error()
			if !strings.Contains(msg, auth.Redacted) || !strings.Contains(msg, id) {
				t.Errorf("err = %q: want the echo masked and the client id readable", msg)
			}
			for _, f := range secretForms {
				if form := f.enc(secret); strings.Contains(msg, form) {
					t.Errorf("err = %q holds the secret %s: %q", msg, f.name, form)
				}
			}
			if strings.Contains(msg, url.QueryEscape(secret)) {
				t.Errorf("err = %q holds the form-encoded secret", msg)
			}
		})
	}
}

func phpSlashes(s string) string { return strings.ReplaceAll(s, "/", `\/`) }
