package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestProxyServerNotYetPolled (review77): an MCP server reading
// GH_TOKEN, which the catalog's notes_get sends to its API, registered
// by the CLI (a write this process sees at its next poll of the
// counters). The index of where keys go, read before, does not know it;
// the call reads its row afresh. Before, the check skipped a key it could
// not place and the proxy sent the server user 7's GH_TOKEN until the
// poll; now the key is refused (credential_not_bound) while catalog
// plugins read it.
func TestProxyServerNotYetPolled(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	e, _, _, _, _ := decisionEnv(t, st, func(s *api.Server) {
		m := enginemcp.NewManager(st, egresstest.Client(t))
		t.Cleanup(func() { m.Close() })
		enginemcp.Invoker{Manager: m}.RegisterOn(s.Executor)
		s.MCP = &api.MCPConfig{Manager: m}
	})
	// A call of a catalog row: the index is read.
	if code, out := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "notes_get", "user_id": 7, "arguments": map[string]any{"q": "x"}}); code == http.StatusNotFound || code == http.StatusBadRequest {
		t.Fatalf("notes_get: %d %v", code, out)
	}
	look := mcptest.New(t)
	look.AddTool("whoami", "Who the server thinks you are.", `{"type":"object"}`, func(context.Context, map[string]any) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello"}}}
	})
	url := look.Endpoint
	if err := st.CreateMCPServer(t.Context(), &store.MCPServer{ID: "look", Name: "look", Transport: store.TransportStreamableHTTP, URL: url, CredentialsURL: &url,
		AuthConfig: store.JSON(`{"type":"bearer","token":"GH_TOKEN"}`)}); err != nil {
		t.Fatal(err)
	}
	code, out := e.do("POST", "/v1/mcp/proxy/look/tools/whoami/call?user_id=7", serviceToken, map[string]any{})
	for _, h := range look.Headers() {
		if strings.Contains(strings.Join(h.Values("Authorization"), " "), ghToken) {
			t.Fatalf("the server registered by the CLI was sent GH_TOKEN: %d %v", code, out)
		}
	}
	if code != http.StatusUnprocessableEntity || errCode(out) != engine.CodeCredentialNotBound {
		t.Errorf("%d %v, want 422 %s", code, out, engine.CodeCredentialNotBound)
	}
}
