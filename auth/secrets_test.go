package auth_test

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/plugins"
)

func TestMaskerForClassifies(t *testing.T) {
	basic := plugins.AuthConfig{Type: plugins.AuthBasic, Username: "U", Password: "P",
		Mapping: []plugins.AuthMapping{{Source: "TENANT", Target: "X-Tenant", Secret: new(false)}, {Source: "EXTRA", Target: "X-Extra"}}}
	oauth := plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{TokenURL: "https://idp.example/token", ClientID: "ID", ClientSecret: "CS"}}
	creds := map[string]string{"U": "approver", "P": "hunter22/x", "TENANT": "acme-corp", "EXTRA": "extra-secret", "ID": "client-app", "CS": "cs/secret+1"}
	tests := []struct {
		name    string
		cfg     plugins.AuthConfig
		derived []string
		in      string
		want    string
	}{
		{"username is data", basic, nil, `{"approved_by":"approver"}`, `{"approved_by":"approver"}`},
		{"tenant marked not secret is data", basic, nil, `tenant acme-corp`, `tenant acme-corp`},
		{"password masked", basic, nil, `{"p":"hunter22\/x"}`, `{"p":"` + auth.Redacted + `"}`},
		{"other mapping entries are secrets", basic, nil, `X-Extra: extra-secret`, `X-Extra: ` + auth.Redacted},
		{"the pair masks the username with it", basic, []string{"approver:hunter22/x"}, "approver:hunter22/x by approver", auth.Redacted + " by approver"},
		{"basic header echo", basic, []string{"approver:hunter22/x"},
			"Basic " + base64.StdEncoding.EncodeToString([]byte("approver:hunter22/x")), "Basic " + auth.Redacted},
		{"client id is data", oauth, nil, `{"client":"client-app"}`, `{"client":"client-app"}`},
		{"oauth2 form echo", oauth, nil, "client_id=client-app&client_secret=" + url.QueryEscape("cs/secret+1"),
			"client_id=client-app&client_secret=" + auth.Redacted},
		{"a config that reads nothing masks every credential", plugins.AuthConfig{}, nil, "approver", auth.Redacted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := auth.MaskerFor(tt.cfg.IdentifierKeys(), creds, tt.derived...).String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	first, again := auth.MaskerFor(basic.IdentifierKeys(), creds), auth.MaskerFor(basic.IdentifierKeys(), creds)
	if first != again {
		t.Error("MaskerFor built twice for the same secrets")
	}
}

func TestCheckSecretLengths(t *testing.T) {
	cfg := plugins.AuthConfig{Type: plugins.AuthBasic, Username: "U", Password: "P",
		Mapping: []plugins.AuthMapping{{Source: "T", Target: "X-Tenant", Secret: new(false)}, {Source: "K", Target: "X-Key"}}}
	tests := []struct {
		name  string
		creds map[string]string
		key   string // named by the error; "" for none
	}{
		{"long enough", map[string]string{"U": "al", "P": "pass", "T": "t", "K": "kkkk"}, ""},
		{"short password", map[string]string{"U": "alice", "P": "abc", "T": "t", "K": "kkkk"}, "P"},
		{"short mapping entry", map[string]string{"U": "alice", "P": "pass", "T": "t", "K": "k"}, "K"},
		{"two short: the first in order named", map[string]string{"U": "alice", "P": "p", "T": "t", "K": "k", "A": "q", "Z": "z"}, "A"},
		{"absent values are for the missing-credentials check", map[string]string{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := auth.CheckSecretLengths(cfg.IdentifierKeys(), tt.creds)
			if tt.key == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !errors.Is(err, auth.ErrSecretTooShort) || !auth.IsSecretTooShort(err) || !strings.Contains(err.Error(), "credential "+tt.key+":") {
				t.Fatalf("err = %v, want ErrSecretTooShort naming %s", err, tt.key)
			}
			if strings.Contains(err.Error(), tt.creds[tt.key]+" ") {
				t.Errorf("err %q quotes the value", err)
			}
		})
	}
	if err := auth.CheckSecretLength("K", "abc"); !errors.Is(err, auth.ErrSecretTooShort) {
		t.Errorf("CheckSecretLength = %v", err)
	}
	_, err := auth.NewAuthenticator(nil).Apply(t.Context(), cfg, map[string]string{"U": "alice", "P": "abc", "T": "t", "K": "kkkk"}, newApplyRequest(t, "http://api.example/"))
	if !errors.Is(err, auth.ErrSecretTooShort) {
		t.Errorf("Apply with a short password: %v", err)
	}
}
