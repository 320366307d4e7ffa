package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
)

// tls81: a plugin call that would send a user's key, or an oauth2
// client's secret, to an http:// URL is refused before anything is
// dialled (egress_denied, naming the origin and https), unless the host
// is loopback or the operator lists it; a call without credentials is
// sent as before. The names resolve to loopback, so what was refused
// would have been reached.
func TestPlaintextCredentialsRefused(t *testing.T) {
	api := newUpstream(t, nil)
	token := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer","expires_in":3600}`, secretToken)
	})
	apiPort, tokenPort := portOf(t, api.URL), portOf(t, token.URL)
	const (
		key    = "user-key-0123456789"
		secret = "client-secret-0123456789"
	)
	creds := map[string]string{"KEY": key, "USER": "someone", "PASS": key, "CID": "client-id-1", "CSECRET": secret}
	auths := map[string]string{
		"header": `{"type":"api_key","mapping":[{"source":"KEY","target":"X-Api-Key"}]}`,
		"query":  `{"type":"api_key","mapping":[{"source":"KEY","target":"key","location":"query"}]}`,
		"cookie": `{"type":"api_key","mapping":[{"source":"KEY","target":"sid","location":"cookie"}]}`,
		"bearer": `{"type":"bearer","token":"KEY"}`,
		"basic":  `{"type":"basic","username":"USER","password":"PASS"}`,
		"oauth2": `{"type":"oauth2","oauth2":{"token_url":"http://TOKENHOST:` + tokenPort + `/token","client_id":"CID","client_secret":"CSECRET"}}`,
		"none":   `{"type":"none"}`,
	}
	tests := []struct {
		name, auth, apiHost, tokenHost, listed string
		refused                                bool
	}{
		{"header key to a named host", "header", "api.test", "", "", true},
		{"query key to a named host", "query", "api.test", "", "", true},
		{"cookie key to a named host", "cookie", "api.test", "", "", true},
		{"bearer to a named host", "bearer", "api.test", "", "", true},
		{"basic to a named host", "basic", "api.test", "", "", true},
		{"no credentials to a named host", "none", "api.test", "", "", false},
		{"key to loopback", "header", "127.0.0.1", "", "", false},
		{"key to localhost", "query", "localhost", "", "", false},
		{"key to a listed host", "header", "intranet.test", "", "intranet.test", false},
		{"key to a listed origin", "bearer", "intranet.test", "", "http://intranet.test:" + apiPort, false},
		{"key to a host not listed", "header", "api.test", "", "intranet.test", true},
		{"client secret to a named token host", "oauth2", "127.0.0.1", "auth.test", "", true},
		{"client secret to a listed token host", "oauth2", "127.0.0.1", "auth.test", "auth.test", false},
		{"client secret to a loopback token host", "oauth2", "127.0.0.1", "127.0.0.1", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, dialled := egresstest.NamedClient(t, tt.listed, "api.test", "intranet.test", "auth.test")
			h := NewExecutor(client)
			doc := `{"name":"t","description":"d","parameters":{"type":"object"},
			  "execution":{"method":"GET","base_url":"%s/x","retry":{"max_attempts":1}},
			  "auth_config":` + strings.ReplaceAll(auths[tt.auth], "TOKENHOST", tt.tokenHost) + `}`
			p := mustPlugin(t, doc, "http://"+tt.apiHost+":"+apiPort)
			apiBefore, tokenBefore := len(api.Hits()), len(token.Hits())
			res, err := h.Execute(context.Background(), Call{Plugin: p, Arguments: json.RawMessage(`{}`), Credentials: creds, UserID: 7, RunID: "run-1"})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.refused {
				if !res.OK || len(api.Hits()) != apiBefore+1 {
					t.Fatalf("not sent: %s", resultJSON(t, res))
				}
				return
			}
			if res.OK || res.Error.Code != CodeEgressDenied || !strings.Contains(res.Error.Message, "https://") ||
				!strings.Contains(res.Error.Message, egress.EnvPlaintextCredentialHosts) {
				t.Fatalf("%s, want egress_denied expecting https", resultJSON(t, res))
			}
			if d := dialled(); len(d) > 0 || len(api.Hits()) != apiBefore || len(token.Hits()) != tokenBefore {
				t.Fatalf("dialled %v before refusing", d)
			}
			if f := leaked(resultJSON(t, res), key, secret); f != nil {
				t.Fatalf("the refusal shows %v", f)
			}
		})
	}
}

func portOf(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}
