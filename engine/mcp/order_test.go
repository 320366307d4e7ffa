package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// orderedSchema lists its fields out of alphabetical order, spaced as an
// upstream may write it.
const orderedSchema = `{"type":"object", "properties":{"zeta":{"type":"string","title":"Zeta"},
	"alpha":{"type":"integer","default":3},"mid":{"type":"boolean"}},"required":["mid","zeta"]}`

// addAsk adds to srv the tool "ask", which asks its client the form
// orderedSchema and answers with the action it got. It asks by
// input_required, which the go-sdk's server turns into an
// elicitation/create on the session for a client of 2025.
func addAsk(srv *sdk.Server) {
	srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, ok := req.Params.InputResponses["form"].(*sdk.ElicitResult)
			if !ok {
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{
					"form": &sdk.ElicitParams{Message: "Which?", RequestedSchema: json.RawMessage(orderedSchema)}}}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Action}}}, nil
		})
}

// TestQuestionKeepsOrder (issue 48 point 4): an upstream's form question
// reaches the call's asker with its fields in the order the upstream
// wrote them (the SDK would sort them), over each transport.
func TestQuestionKeepsOrder(t *testing.T) {
	served := func(h http.Handler) string {
		up := httptest.NewServer(h)
		t.Cleanup(up.Close)
		return up.URL
	}
	newServer := func(*http.Request) *sdk.Server {
		srv := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "1"}, nil)
		addAsk(srv)
		return srv
	}
	stdio, _ := json.Marshal([]string{os.Args[0], "-test.run=^$", metaEchoArg})
	for _, row := range []store.MCPServer{
		{Transport: store.TransportStdio, Command: stdio},
		{Transport: store.TransportStreamableHTTP, URL: served(sdk.NewStreamableHTTPHandler(newServer, nil))},
		{Transport: store.TransportSSE, URL: served(sdk.NewSSEHandler(newServer, nil))},
	} {
		t.Run(row.Transport, func(t *testing.T) {
			row.ID, row.Name = "srv-1", "asking"
			ex, _ := setup(t, row)
			var asked []engine.Question
			ctx := engine.WithAsker(context.Background(), func(_ context.Context, q engine.Question) (engine.Answer, error) {
				asked = append(asked, q)
				return engine.Answer{Action: "decline"}, nil
			})
			p := &plugins.Plugin{Name: "ask", Description: "x", Parameters: json.RawMessage(`{"type":"object"}`),
				Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: "srv-1", ToolName: "ask"}}
			res, err := ex.Execute(ctx, engine.Call{Plugin: p, Arguments: json.RawMessage(`{}`)})
			if err != nil || !res.OK || !strings.Contains(string(res.Output), "decline") {
				t.Fatalf("call: %+v %v", res, err)
			}
			want := `{"type":"object","properties":{"zeta":{"type":"string","title":"Zeta"},"alpha":{"type":"integer","default":3},"mid":{"type":"boolean"}},"required":["mid","zeta"]}`
			if len(asked) != 1 || string(asked[0].Schema) != want {
				var schemas []string
				for _, q := range asked {
					schemas = append(schemas, string(q.Schema))
				}
				t.Fatalf("asked schemas %q, want one: %s", schemas, want)
			}
		})
	}
}
