package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestProxySendsNoKeyElsewhere (hosts76): parity76's fixture case. An MCP
// server registered reading GH_TOKEN, which the catalog's notes_get sends
// to another origin, is sent no user's GH_TOKEN through the proxy's tool
// without a row — neither its tools/list nor its tools/call — with the
// service token or a per-user token: refused by the decision as
// credential_not_bound, naming the key and both origins, never its value,
// and recorded. Once the administrator enables a row of that server's
// tools (deliberately: the import holds them disabled), the key goes there
// and the proxy calls the server.
func TestProxySendsNoKeyElsewhere(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	e, up, userToken, _, _ := decisionEnv(t, st, func(s *api.Server) {
		m := enginemcp.NewManager(st, egresstest.Client(t))
		t.Cleanup(func() { m.Close() })
		enginemcp.Invoker{Manager: m}.RegisterOn(s.Executor)
		s.MCP = &api.MCPConfig{Manager: m}
	})
	look := mcptest.New(t)
	for _, name := range []string{"whoami", "other"} {
		look.AddTool(name, "Who the server thinks you are.", `{"type":"object"}`, func(context.Context, map[string]any) *sdk.CallToolResult {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello"}}}
		})
	}
	if code, out := e.do("POST", "/v1/mcp/servers", adminToken, map[string]any{"mcp_id": "look", "name": "look", "url": look.Endpoint,
		"auth_config": map[string]any{"type": "bearer", "token": "GH_TOKEN"}}); code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, out)
	}
	keySent := func() bool {
		for _, h := range look.Headers() {
			if strings.Contains(strings.Join(h.Values("Authorization"), " "), ghToken) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct{ who, token, query string }{
		{"the service token", serviceToken, "?user_id=7"},
		{"a per-user token", userToken, ""},
	} {
		code, out := e.do("POST", "/v1/mcp/proxy/look/tools/whoami/call"+c.query, c.token, map[string]any{})
		refusal, _ := out["error"].(map[string]any)
		msg, _ := refusal["message"].(string)
		if code != http.StatusUnprocessableEntity || refusal["code"] != engine.CodeCredentialNotBound {
			t.Errorf("%s: %d %v, want 422 %s", c.who, code, out, engine.CodeCredentialNotBound)
		}
		if !strings.Contains(msg, "GH_TOKEN") || !strings.Contains(msg, auth.Origin(look.Endpoint)) ||
			!strings.Contains(msg, strings.ToLower(up.URL)) || strings.Contains(string(mustJSON(t, out)), ghToken) {
			t.Errorf("%s: the refusal says %q: want the key's name and both origins, never its value", c.who, msg)
		}
		if keySent() || len(look.Calls()) != 0 {
			t.Errorf("%s: the lookalike server was sent GH_TOKEN (tools/list or tools/call: %d calls)", c.who, len(look.Calls()))
		}
	}

	// The administrator registers a row of the server's tools, enabled:
	// its origin is now one the catalog sends GH_TOKEN to.
	if code, out := e.do("POST", "/v1/plugins", adminToken, `{"name":"look_other","description":"d","parameters":{"type":"object"},"execution":{"type":"mcp","mcp_id":"look","tool_name":"other"}}`); code != http.StatusCreated {
		t.Fatalf("add the row: %d %v", code, out)
	}
	if code, out := e.do("POST", "/v1/mcp/proxy/look/tools/whoami/call?user_id=7", serviceToken, map[string]any{}); code != http.StatusOK || len(look.Calls()) != 1 || !keySent() {
		t.Errorf("once a row sends GH_TOKEN there: %d %v, %d calls", code, out, len(look.Calls()))
	}
}
