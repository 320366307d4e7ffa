package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestExecuteUpstreamQuestion: /v1/execute has no person to ask, so an
// imported MCP tool whose server asks during the call gets a refusal at
// once — the call answers, it does not wait out its timeout — and the
// execution record says what was asked (issue 48 point 4).
func TestExecuteUpstreamQuestion(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newMCPEnv(t, st)
		e.ex.Recorder = engine.NewRecorder(StoreSink{Store: st}, engine.RecorderOptions{FlushInterval: time.Millisecond})
		t.Cleanup(func() { e.ex.Recorder.Close(context.Background()) })
		e.up.MCP.AddTool(&sdk.Tool{Name: "ask_person", Description: "Asks the person.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				_, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Which size?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"size":{"type":"string","enum":["S","L"]}}}`)})
				text := "answered"
				if err != nil {
					text = err.Error()
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
			})
		e.register()
		if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != 200 {
			t.Fatalf("import: %d %v", code, out)
		}
		start := time.Now()
		code, out := e.do("POST", "/v1/execute", mcpService, map[string]any{"name": "ask_person", "user_id": "7", "arguments": map[string]any{}})
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("/v1/execute took %v", d)
		}
		b, _ := json.Marshal(out)
		if code != http.StatusOK || !strings.Contains(string(b), "elicitation refused: nobody can be asked") {
			t.Fatalf("/v1/execute = %d %s", code, b)
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			_, list := e.do("GET", "/v1/executions?plugin=ask_person", mcpAdmin, nil)
			rows, _ := list["executions"].([]any)
			if len(rows) == 1 {
				q, _ := rows[0].(map[string]any)["questions"].(string)
				if !strings.Contains(q, `"server":"med"`) || !strings.Contains(q, `"message":"Which size?"`) || !strings.Contains(q, `"error":"nobody can be asked`) {
					t.Errorf("record's questions = %q", q)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no record: %v", list)
			}
		}
	})
}
