package mcp_test

import (
	"strings"
	"testing"

	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/plugins"
)

// TestServerSpecAuth: an MCP server's auth config is one the engine can
// apply to its sessions; a user's connection (grant authorization_code)
// is for http plugins only, so a server naming a provider is refused at
// registration, naming the field, not found unusable call after call.
func TestServerSpecAuth(t *testing.T) {
	for _, tc := range []struct {
		name string
		auth *plugins.AuthConfig
		want string // "" accepted, else in the error
	}{
		{"none", nil, ""},
		{"bearer", &plugins.AuthConfig{Type: plugins.AuthBearer}, ""},
		{"client credentials", &plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{TokenURL: "https://id.example/token"}}, ""},
		{"an unknown type", &plugins.AuthConfig{Type: "digest"}, "auth_config.type"},
		{"a user's connection", &plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{Grant: plugins.GrantAuthorizationCode, Provider: "acme"}}, "auth_config.oauth2.grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mcp.ServerSpec{Name: "s", URL: "https://mcp.example/mcp", AuthConfig: tc.auth}.Row("admin")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
