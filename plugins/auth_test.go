package plugins_test

import (
	"slices"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

func TestAuthConfigKeys(t *testing.T) {
	no := false
	tests := []struct {
		name      string
		cfg       plugins.AuthConfig
		keys, ids []string
	}{
		{"api_key mapping: secrets", plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{{Source: "K"}, {Source: "T", Secret: &no}}},
			[]string{"K", "T"}, []string{"T"}},
		{"basic: the username is an identifier", plugins.AuthConfig{Type: plugins.AuthBasic, Username: "U", Password: "P"},
			[]string{"P", "U"}, []string{"U"}},
		{"oauth2: the client id is an identifier", plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{TokenURL: "https://idp/t", ClientID: "ID", ClientSecret: "CS"}},
			[]string{"CS", "ID"}, []string{"ID"}},
		{"a key read both ways is a secret", plugins.AuthConfig{Type: plugins.AuthBasic, Username: "U", Password: "P", Mapping: []plugins.AuthMapping{{Source: "U"}}},
			[]string{"P", "U"}, nil},
		{"bearer from a mapping marked not secret is still a token", plugins.AuthConfig{Type: plugins.AuthBearer, Mapping: []plugins.AuthMapping{{Source: "TOK", Secret: &no}}},
			[]string{"TOK"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.CredentialKeys(); !slices.Equal(got, tt.keys) {
				t.Errorf("CredentialKeys = %v, want %v", got, tt.keys)
			}
			// In a buffer holding other keys already, too small or not.
			for _, buf := range [][]string{{"Z", "A"}, make([]string, 1), make([]string, 8)} {
				if got := tt.cfg.CredentialKeysIn(buf); !slices.Equal(got, tt.keys) {
					t.Errorf("CredentialKeysIn(%d) = %v, want %v", len(buf), got, tt.keys)
				}
			}
			if got := tt.cfg.IdentifierKeys(); !slices.Equal(got, tt.ids) {
				t.Errorf("IdentifierKeys = %v, want %v", got, tt.ids)
			}
		})
	}
}
