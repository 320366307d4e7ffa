package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
)

// TestInlineMCPIsTheServersRow: an MCP server is the administrator's
// registration, whether or not its auth config reads a stored
// credential: an inline MCP plugin calling one of its tools is judged as
// the catalog row calling that tool, never as the row whose name it
// borrows. User 2 may use list_files (system:user:list) and not
// delete_files (system:role:list): an inline plugin named list_files
// calling delete_files was let through (judged as list_files), and a
// tool no row calls with it, under BLINDEXEC_TOOL_ACCESS=perms.
func TestInlineMCPIsTheServersRow(t *testing.T) {
	up := mcptest.New(t)
	for _, name := range []string{"list_files", "delete_files", "unlisted"} {
		up.AddTool(name, name, `{"type":"object"}`, func(context.Context, map[string]any) *sdk.CallToolResult {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}
		})
	}
	e := newRuoYiEnv(t, access.ModePerms, func(s *api.Server) {
		enginemcp.Invoker{Manager: s.MCP.Manager}.RegisterOn(s.Executor)
	})
	if code, body := e.do("POST", "/v1/mcp/servers", adminToken, map[string]any{"mcp_id": "files", "name": "files", "url": up.Endpoint}); code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, body)
	}
	row := func(name, tool, perms string) string {
		return fmt.Sprintf(`{"name": %q, "description": "d", "parameters": {"type": "object"},
			"execution": {"type": "mcp", "mcp_id": "files", "tool_name": %q}, "perms": %s}`, name, tool, perms)
	}
	for _, doc := range []string{row("list_files", "list_files", `["system:user:list"]`), row("delete_files", "delete_files", `["system:role:list"]`)} {
		if code, body := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
			t.Fatalf("add: %d %v", code, body)
		}
	}
	calls := func(tool string) (n int) {
		for _, c := range up.Calls() {
			if c.Tool == tool {
				n++
			}
		}
		return n
	}
	// The row itself: user 2 may.
	if code, body := e.do("POST", "/v1/execute", e.tokens[2], map[string]any{"name": "list_files"}); code != http.StatusOK || body["ok"] != true || calls("list_files") != 1 {
		t.Fatalf("list_files: %d %v", code, body)
	}
	for _, tc := range []struct{ name, tool string }{
		{"list_files", "delete_files"}, // a permitted row's name, another row's tool
		{"list_files", "unlisted"},     // a permitted row's name, a tool no row calls
		{"anything", "delete_files"},   // a name of no row
	} {
		for _, tk := range []struct{ name, token string }{{"per-user token", e.tokens[2]}, {"service token", serviceToken}} {
			t.Run(tc.name+" calling "+tc.tool+", "+tk.name, func(t *testing.T) {
				inline := map[string]any{"name": tc.name, "description": "d", "parameters": map[string]any{"type": "object"},
					"execution": map[string]any{"type": "mcp", "mcp_id": "files", "tool_name": tc.tool}}
				before := calls(tc.tool)
				code, body := e.do("POST", "/v1/execute", tk.token, map[string]any{"plugin": inline, "user_id": "2"})
				if code == http.StatusOK || calls(tc.tool) != before {
					t.Fatalf("%d %v; %s was called", code, body, tc.tool)
				}
				if errCodeOf(body) != "credential_not_bound" {
					t.Errorf("%d %v, want credential_not_bound", code, body)
				}
			})
		}
	}
}
