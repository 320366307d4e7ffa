package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPImportTooLarge: a server whose tools, each within a plugin's
// limits, are over the import's limit together — as its tools/list holds
// them, or as the plugins they make — is refused as an OpenAPI document
// is: 400 import_too_large naming the limit, its setting and the tool,
// and nothing written.
func TestMCPImportTooLarge(t *testing.T) {
	props := map[string]any{}
	for i := range 200 {
		props[fmt.Sprintf("property_%03d", i)] = map[string]any{"type": "string", "description": strings.Repeat("d", 40)}
	}
	for _, tc := range []struct {
		name      string
		set       func(*Server)
		wantInMsg string
	}{
		{"the tools/list answer", func(s *Server) { s.MCP.Manager.MaxToolsBytes = 64 << 10 }, "tools/list answer is over"},
		{"the plugins", func(s *Server) { s.ImportMaxBytes = 64 << 10 }, "tools make plugins over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite), tc.set)
			for i := range 20 { // some 15 kB each
				e.up.MCP.AddTool(&sdk.Tool{Name: fmt.Sprintf("wide_%02d", i), InputSchema: map[string]any{"type": "object", "properties": props}},
					func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
						return &sdk.CallToolResult{}, nil
					})
			}
			e.register()
			code, res := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7})
			apiErr, _ := res["error"].(map[string]any)
			details, _ := apiErr["details"].(map[string]any)
			msg, _ := apiErr["message"].(string)
			if code != http.StatusBadRequest || apiErr["code"] != "import_too_large" || details["limit"] != "import bytes" ||
				details["max"] != float64(64<<10) || details["tool"] == "" || !strings.Contains(msg, "65536 bytes (BLINDEXEC_IMPORT_MAX_MB)") ||
				!strings.Contains(msg, tc.wantInMsg) {
				t.Fatalf("import: %d %v", code, res)
			}
			if rows, err := e.st.ListPlugins(t.Context(), store.PluginFilter{}); err != nil || len(rows) != 0 {
				t.Errorf("a refused import wrote %d plugins (%v)", len(rows), err)
			}
		})
	}
}
