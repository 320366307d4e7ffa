package auth_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

func TestOrigin(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://API.Example.com/v1/x?y#z", "https://api.example.com:443"},
		{"http://api.example.com", "http://api.example.com:80"},
		{"HTTP://api.example.com:8080/", "http://api.example.com:8080"},
		{"https://user:pw@api.example.com/", "https://api.example.com:443"},
		{"http://[::1]:9000/mcp", "http://[::1]:9000"},
		{"not a url", "not a url"},
	}
	for _, tt := range tests {
		if got := auth.Origin(tt.in); got != tt.want {
			t.Errorf("Origin(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDestinations(t *testing.T) {
	const api, idp = "https://api.example:443", "https://idp.example:443"
	tests := []struct {
		name string
		cfg  plugins.AuthConfig
		want map[string][]string
	}{
		{"mapping", plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{{Source: "K", Target: "T"}}},
			map[string][]string{"K": {api}}},
		{"basic", plugins.AuthConfig{Type: plugins.AuthBasic, Username: "U", Password: "P"},
			map[string][]string{"U": {api}, "P": {api}}},
		// The client secret goes to the token endpoint, and the token it
		// buys to the API: both origins bind it.
		{"oauth2 client credentials", plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{TokenURL: "https://IDP.example/token", ClientID: "ID", ClientSecret: "CS"}},
			map[string][]string{"ID": {api, idp}, "CS": {api, idp}}},
		{"oauth2 access token", plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{AccessToken: "AT"}},
			map[string][]string{"AT": {api}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := auth.Destinations(tt.cfg, api); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Destinations = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCatalogRules(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		add := func(p *plugins.Plugin) {
			t.Helper()
			row, err := catalog.RowFromPlugin(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.CreatePlugin(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		httpPlugin := func(name, base string, cfg plugins.AuthConfig) *plugins.Plugin {
			return &plugins.Plugin{Name: name, Parameters: []byte(`{"type":"object"}`),
				Execution: plugins.Execution{Method: "GET", BaseURL: base}, AuthConfig: cfg}
		}
		key := plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{{Source: "K", Target: "X-Key"}, {Source: "TENANT", Target: "X-Tenant", Secret: new(false)}}}
		oauth := plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{TokenURL: "https://idp.example/token", ClientID: "ID", ClientSecret: "CS"}}
		add(httpPlugin("keyed", "https://api.example/v1", key))
		add(httpPlugin("oauth", "https://oauth-api.example/v1", oauth))
		mcpAuth := []byte(`{"type":"bearer","token":"MCP_TOKEN"}`)
		if err := st.CreateMCPServer(ctx, &store.MCPServer{ID: "srv-1", Name: "tools", Transport: store.TransportStreamableHTTP, URL: "https://mcp.example/mcp", AuthConfig: mcpAuth}); err != nil {
			t.Fatal(err)
		}
		add(&plugins.Plugin{Name: "mcp_tool", Parameters: []byte(`{"type":"object"}`), RequiredCredentials: []string{"MCP_TOKEN"},
			Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: "tools", ToolName: "t"}})

		changes := store.NewWatcher(st, time.Hour, nil) // polled by hand below
		changes.Poll(ctx)
		c := auth.NewCatalog(st, changes)
		tests := []struct {
			name  string
			p     *plugins.Plugin
			keys  []string
			bad   string // the key refused; "" for allowed
			where string // the origin refused
		}{
			{"the catalog plugin itself", httpPlugin("x", "https://api.example/v1/other", key), []string{"K", "TENANT"}, "", ""},
			{"another path and port spelling of the origin", httpPlugin("x", "https://API.example:443/v2", key), []string{"K"}, "", ""},
			{"another host", httpPlugin("x", "https://evil.example/v1", key), []string{"K"}, "K", "https://evil.example:443"},
			{"another scheme", httpPlugin("x", "http://api.example/v1", key), []string{"K"}, "K", "http://api.example:80"},
			{"another port", httpPlugin("x", "https://api.example:8443/v1", key), []string{"K"}, "K", "https://api.example:8443"},
			{"identifiers are bound too", httpPlugin("x", "https://evil.example/v1", key), []string{"TENANT"}, "TENANT", "https://evil.example:443"},
			{"payload keys are not checked", httpPlugin("x", "https://evil.example/v1", key), nil, "", ""},
			{"a key read elsewhere by the catalog", httpPlugin("x", "https://api.example/v1", plugins.AuthConfig{Type: plugins.AuthBearer, Token: "MCP_TOKEN"}), []string{"MCP_TOKEN"}, "MCP_TOKEN", "https://api.example:443"},
			{"the oauth2 copy", httpPlugin("x", "https://oauth-api.example/v2", oauth), []string{"ID", "CS"}, "", ""},
			{"the catalog's token_url, the token sent elsewhere", httpPlugin("x", "https://evil.example/", oauth), []string{"ID", "CS"}, "CS", "https://evil.example:443"},
			{"an http plugin at the MCP server's origin", httpPlugin("x", "https://mcp.example/other", plugins.AuthConfig{Type: plugins.AuthBearer, Token: "MCP_TOKEN"}), []string{"MCP_TOKEN"}, "", ""},
			{"an inline MCP plugin on the registered server", &plugins.Plugin{Name: "x", Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: "srv-1"}}, []string{"MCP_TOKEN"}, "", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := c.CheckOrigins(ctx, tt.p, tt.keys)
				if tt.bad == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				var ue *auth.UnboundCredentialError
				if !errors.As(err, &ue) || !errors.Is(err, auth.ErrCredentialNotBound) || ue.Key != tt.bad || ue.Origin != tt.where {
					t.Fatalf("err = %v, want %s refused for %s", err, tt.bad, tt.where)
				}
			})
		}

		// A plugin added binds once the change counters are polled again
		// (an API write polls them before it answers).
		moved := httpPlugin("x", "https://new.example/v1", key)
		if err := c.CheckOrigins(ctx, moved, []string{"K"}); err == nil {
			t.Fatal("new.example allowed before any plugin names it")
		}
		add(httpPlugin("new", "https://new.example/v1", key))
		changes.Poll(ctx)
		if err := c.CheckOrigins(ctx, moved, []string{"K"}); err != nil {
			t.Fatalf("after adding the plugin: %v", err)
		}
		// Disabled: binds nothing once the catalog is read again.
		if err := st.SetPluginStatus(ctx, "new", store.StatusDisabled, "test"); err != nil {
			t.Fatal(err)
		}
		if err := c.CheckOrigins(ctx, moved, []string{"K"}); err != nil {
			t.Fatalf("disabled but not yet polled: the catalog read is trusted: %v", err)
		}
		changes.Poll(ctx)
		if err := c.CheckOrigins(ctx, moved, []string{"K"}); err == nil {
			t.Fatal("a disabled plugin still binds")
		}

		for k, want := range map[string]bool{"TENANT": true, "ID": true, "K": false, "CS": false, "NOBODY": false} {
			if got, err := c.IsIdentifier(ctx, k); err != nil || got != want {
				t.Errorf("IsIdentifier(%s) = %v, %v; want %v", k, got, err, want)
			}
		}
	})
}
