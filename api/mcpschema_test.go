package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPSchemasAsWritten: an imported MCP tool's inputSchema reaches an
// MCP client's tools/list as its server wrote it ($defs and $ref of the
// recursive tree), the model's list gets the resolved subset, and a call
// is validated against the written schema — below the depth the resolved
// form keeps, a wrong label is refused before anything is sent (issue 48
// point 5).
func TestMCPSchemasAsWritten(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	e.register()
	if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != 200 {
		t.Fatalf("import: %d %v", code, out)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: Bearer(e.userTok)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var tree []byte
	for _, tl := range list.Tools {
		if tl.Name == "tree" {
			tree, _ = json.Marshal(tl.InputSchema)
		}
	}
	if !strings.Contains(string(tree), `"$defs":{"Node"`) || !strings.Contains(string(tree), `"$ref":"#/$defs/Node"`) {
		t.Errorf("tools/list's tree: %s, want the schema as written", tree)
	}
	code, out := e.do("GET", "/v1/tools?user_id=7", mcpService, nil)
	var model []byte
	for _, tl := range out["tools"].([]any) {
		if f := tl.(map[string]any)["function"].(map[string]any); f["name"] == "tree" {
			model, _ = json.Marshal(f["parameters"])
		}
	}
	if code != 200 || !strings.Contains(string(model), `"label"`) || strings.Contains(string(model), `$defs`) || strings.Contains(string(model), `$ref`) {
		t.Errorf("the model's tree: %d %s, want it resolved", code, model)
	}
	deep := map[string]any{"root": map[string]any{"children": []any{map[string]any{"children": []any{map[string]any{"children": []any{map[string]any{"label": 7}}}}}}}}
	before := len(e.up.Calls())
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "tree", Arguments: deep})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !res.IsError || !strings.Contains(text, "label") || len(e.up.Calls()) != before {
		t.Errorf("a deep wrong label: %v %q, upstream calls %d → %d", res.IsError, text, before, len(e.up.Calls()))
	}
}
