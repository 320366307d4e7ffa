package mcp

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/plugins/openapiquery"
)

// TestURLsQuotedWithoutTheirPassword: every error that quotes a URL-valued
// setting or field a password may be written in (its userinfo) shows the
// URL with the userinfo written "…", still naming what is wrong (review78's
// leftover, small79). Here because this package sits above every one that
// quotes such a URL: the importer's --base-url and the /mcp/openapi
// server's, an OAuth provider's URLs, a plugin's oauth2 token_url (refused,
// and the token fetch failing) and an MCP server's url read from its row.
func TestURLsQuotedWithoutTheirPassword(t *testing.T) {
	const secret = "pw-Sm79Qx4Lr"
	doc, err := openapi.Load([]byte(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{}}`), "doc.json")
	if err != nil {
		t.Fatal(err)
	}
	a := auth.NewAuthenticator(&http.Client{Timeout: 5 * time.Second})
	for _, tt := range []struct {
		name, url, names string
		err              func(u string) error
	}{
		{"an import's base URL", "ftp://u:" + secret + "@api.example/v1", "base URL", func(u string) error {
			_, _, err := openapi.Convert(doc, openapi.Options{BaseURL: u})
			return err
		}},
		{"the /mcp/openapi server's base URL", "ftp://u:" + secret + "@api.example", "base URL", func(u string) error {
			_, err := openapiquery.Location(u, "")
			return err
		}},
		{"an OAuth provider's authorization_url", "https://u:" + secret + "@idp.example/authorize", "authorization_url", func(u string) error {
			p := connections.Provider{Name: "idp", AuthorizationURL: u, TokenURL: "https://idp.example/token"}
			return p.Validate()
		}},
		{"an OAuth provider's token_url", "https://u:" + secret + "@idp.example/token", "token_url", func(u string) error {
			p := connections.Provider{Name: "idp", AuthorizationURL: "https://idp.example/authorize", TokenURL: u}
			return p.Validate()
		}},
		{"an OAuth provider's revocation_url", "https://u:" + secret + "@idp.example/revoke", "revocation_url", func(u string) error {
			p := connections.Provider{Name: "idp", AuthorizationURL: "https://idp.example/authorize", TokenURL: "https://idp.example/token", RevocationURL: u}
			return p.Validate()
		}},
		{"a plugin's oauth2 token_url refused", "ftp://u:" + secret + "@idp.example/token", "auth_config.oauth2.token_url", func(u string) error {
			p := plugins.Plugin{Name: "p", AuthConfig: plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{TokenURL: u, ClientID: "CID", ClientSecret: "CSECRET"}}}
			return p.Validate()
		}},
		{"a plugin's oauth2 token fetch failing", "http://u:" + secret + "@127.0.0.1:1/token", "oauth2 token from", func(u string) error {
			req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/x", nil)
			cfg := plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{TokenURL: u, ClientID: "CID", ClientSecret: "CSECRET"}}
			_, err := a.Apply(context.Background(), cfg, map[string]string{"CID": "client-id-small79", "CSECRET": "client-secret-small79"}, req)
			return err
		}},
		{"an MCP server's url read from its row", "ftp://u:" + secret + "@mcp.example/mcp", "MCP server srv", func(u string) error {
			_, err := newAuthTransport(nil, a, &serverConfig{name: "srv", url: u}, nil, nil, 0)
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err(tt.url)
			if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), tt.names) {
				t.Errorf("%s: %v", tt.url, err)
			}
		})
	}
}
