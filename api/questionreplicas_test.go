package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/egress/egresstest"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestQuestionAcrossReplicas (issue 48 point 4): two replicas on one
// database, an imported MCP tool whose server asks during the call. The
// go-sdk client at 2026-07-28 behind a round-robin balancer gets the
// question as input_required from the replica holding the call, and its
// retry — on the other replica — gives the answer, which reaches the
// holding replica's call through the database; the call's result comes
// back to the retry. A question of a /v1/execute call waits on the
// approval page, and is answered on the other replica than the one
// holding the call.
func TestQuestionAcrossReplicas(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := mcptest.New(t)
		up.MCP.AddTool(&sdk.Tool{Name: "pick_size", Description: "Picks a size.", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Which size?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"size":{"type":"string","enum":["S","L"]}},"required":["size"]}`)})
				text := ""
				if err != nil {
					text = "error " + err.Error()
				} else {
					b, _ := json.Marshal(res)
					text = "answered " + string(b)
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
			})
		key, err := mcpserver.StateKey("the master key both replicas are given")
		if err != nil {
			t.Fatal(err)
		}
		replica := func(s *api.Server) {
			m := enginemcp.NewManager(st, egresstest.Client(t))
			t.Cleanup(func() { m.Close() })
			enginemcp.Invoker{Manager: m}.RegisterOn(s.Executor)
			s.MCP = &api.MCPConfig{StateKey: key, Manager: m}
		}
		a, b := newEnv(t, st, replica), newEnv(t, st, replica)
		if code, body := a.do("POST", "/v1/mcp/servers", adminToken, map[string]any{"name": "shop", "url": up.Endpoint}); code != http.StatusCreated {
			t.Fatalf("register: %d %v", code, body)
		}
		if code, body := a.do("POST", "/v1/plugins/import/mcp", adminToken, map[string]any{"server": "shop"}); code != http.StatusOK {
			t.Fatalf("import: %d %v", code, body)
		}
		for _, e := range []*env{a, b} {
			if _, err := e.changes.Poll(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		_, tok := a.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "t"})
		token := tok["token"].(string)

		// The client at 2026-07-28: its retry on the other replica.
		rr, lb := newRoundRobin(t, a.url, b.url)
		var asked []string
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
			Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}},
			ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked = append(asked, req.Params.Message)
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"size": "L"}}, nil
			}}).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: lb + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(token)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s", v)
		}
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "pick_size", Arguments: map[string]any{"n": 1}})
		if err != nil {
			t.Fatal(err)
		}
		if text := res.Content[0].(*sdk.TextContent).Text; res.IsError || text != `answered {"action":"accept","content":{"size":"L"}}` {
			t.Errorf("the call answered %q (error %v)", text, res.IsError)
		}
		if len(asked) != 1 || !strings.HasPrefix(asked[0], `The MCP server "shop" asks: Which size?`) {
			t.Errorf("asked %q", asked)
		}
		first, retry := -1, -1
		for _, s := range rr.log() {
			if s.method == "tools/call" && s.state {
				retry = s.replica
			} else if s.method == "tools/call" {
				first = s.replica
			}
		}
		if first < 0 || retry < 0 || first == retry {
			t.Errorf("the call on replica %d, its retry on %d; want two replicas (%+v)", first, retry, rr.log())
		}

		// /v1/execute on one replica, answered on the other.
		done := make(chan string, 1)
		go func() {
			_, out := a.do("POST", "/v1/execute", token, map[string]any{"name": "pick_size", "arguments": map[string]any{"n": 2}})
			body, _ := json.Marshal(out)
			done <- string(body)
		}()
		var id string
		for deadline := time.Now().Add(10 * time.Second); id == ""; time.Sleep(20 * time.Millisecond) {
			_, list := b.do("GET", "/v1/pending", token, nil)
			for _, it := range list["pending"].([]any) {
				if m := it.(map[string]any); m["kind"] == "question" && m["status"] == nil {
					id = m["id"].(string)
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("no question on the other replica's approval page")
			}
		}
		if code, out := b.do("POST", "/v1/pending/"+id, token, map[string]any{"action": "accept", "content": map[string]any{"size": "S"}}); code != http.StatusOK {
			t.Fatalf("the answer on the other replica: %d %v", code, out)
		}
		select {
		case got := <-done:
			if !strings.Contains(got, `answered {\"action\":\"accept\",\"content\":{\"size\":\"S\"}}`) {
				t.Errorf("/v1/execute after the answer: %s", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("/v1/execute did not answer after the person did on the other replica")
		}
	})
}
