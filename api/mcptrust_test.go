package api

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPAnnotationsAreHints: one upstream registered twice, untrusted
// and trusted (POST /v1/mcp/servers "trusted", listed back). Its tool
// marked read-only is consequential when imported from the untrusted
// registration — annotations may raise a class, never lower it — and not
// when imported from the trusted one; the tool marked destructive is
// consequential from both (issue 48 point 2).
func TestMCPAnnotationsAreHints(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newMCPEnv(t, st)
		destructive := true
		ok := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		}
		obj := json.RawMessage(`{"type":"object"}`)
		e.up.MCP.AddTool(&sdk.Tool{Name: "look", InputSchema: obj, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, ok)
		e.up.MCP.AddTool(&sdk.Tool{Name: "wipe", InputSchema: obj, Annotations: &sdk.ToolAnnotations{DestructiveHint: &destructive}}, ok)
		for _, srv := range []map[string]any{
			{"mcp_id": "shop", "name": "shop", "url": e.up.Endpoint, "auth_config": map[string]any{"type": "bearer", "token": "med_token"}},
			{"mcp_id": "vetted", "name": "vetted", "url": e.up.Endpoint, "auth_config": map[string]any{"type": "bearer", "token": "med_token"}, "trusted": true},
		} {
			if code, out := e.do("POST", "/v1/mcp/servers", mcpAdmin, srv); code != http.StatusCreated || out["trusted"] != (srv["trusted"] == true) {
				t.Fatalf("register %v: %d %v", srv["name"], code, out)
			}
		}
		for _, tt := range []struct {
			server string
			want   map[string]bool
		}{
			{"shop", map[string]bool{"look": true, "wipe": true}},
			{"vetted", map[string]bool{"vetted_look": false, "vetted_wipe": true}},
		} {
			code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": tt.server, "user_id": 7})
			if code != http.StatusOK {
				t.Fatalf("import %s: %d %v", tt.server, code, out)
			}
			got := map[string]bool{}
			for name, c := range out["consequential"].(map[string]any) {
				if _, want := tt.want[name]; want {
					got[name] = c.(bool)
				}
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("import of %s: classification %v, want %v", tt.server, got, tt.want)
			}
		}
	})
}
