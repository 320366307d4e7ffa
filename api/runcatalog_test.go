package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestRunFollowsTheCatalog: a catalog tool a run was offered is the row as
// it is when the model calls it, not as it was when the run started
// (review68: a run kept the rows it loaded at its start for its 10
// minutes, so a tool disabled, or classified consequential, after a run
// started was sent by that run unapproved, as often as its model asked).
func TestRunFollowsTheCatalog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(e *env)
		want   string // the run's status: the second call refused, or waiting for a person
	}{
		{"disabled", func(e *env) {
			if code, body := e.do("PATCH", "/v1/plugins/refund", adminToken, map[string]string{"status": "1"}); code != http.StatusOK {
				t.Errorf("disable: %d %v", code, body)
			}
		}, "completed"},
		{"deleted", func(e *env) {
			if code, body := e.do("DELETE", "/v1/plugins/refund", adminToken, nil); code != http.StatusNoContent {
				t.Errorf("delete: %d %v", code, body)
			}
		}, "completed"},
		{"classified consequential", func(e *env) {
			if code, body := e.do("POST", "/v1/plugins/consequential", adminToken, map[string]any{"names": []string{"refund"}, "consequential": true}); code != http.StatusOK {
				t.Errorf("classify: %d %v", code, body)
			}
		}, "paused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, st *store.Store) {
				llm := openaitest.New(t)
				var e *env
				calls := 0
				up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
					calls++
					if calls == 1 {
						tc.change(e) // the administrator changes the row while the run goes on
					}
					io.WriteString(w, `{"refunded":true}`)
				})
				e = newEnv(t, st, withModel(llm))
				if code, body := e.do("POST", "/v1/plugins", adminToken, quotaPlugin("refund", "GET", up.URL)); code != http.StatusCreated {
					t.Fatalf("add plugin: %d %v", code, body)
				}
				refund := openaitest.ToolCall{Name: "refund", Arguments: `{}`}
				llm.Script(
					openaitest.Turn{ToolCalls: []openaitest.ToolCall{refund}},
					openaitest.Turn{ToolCalls: []openaitest.ToolCall{refund}},
					openaitest.Turn{Content: "done"},
				)
				run := map[string]any{"user_id": 7, "plugin_names": []string{"refund"}, "options": map[string]any{"confirm": "consequential"},
					"messages": []map[string]string{{"role": "user", "content": "refund order 1 twice"}}}
				code, reply := e.do("POST", "/v1/runs", serviceToken, run)
				if code != http.StatusOK {
					t.Fatalf("run: %d %v", code, reply)
				}
				steps, _ := reply["steps"].([]any)
				if reply["status"] != tc.want || len(steps) == 0 || steps[0].(map[string]any)["status"] != "ok" {
					t.Fatalf("run: %v, want %s after a first call sent", reply, tc.want)
				}
				switch pending, _ := reply["pending"].([]any); {
				case tc.want == "paused" && len(pending) != 1:
					t.Fatalf("pending: %v, want the second call", pending)
				case tc.want == "completed" && (len(steps) != 2 || steps[1].(map[string]any)["status"] != "refused"):
					t.Fatalf("steps: %v, want the second call refused", steps)
				}
				if n := len(up.received()); n != 1 {
					t.Fatalf("the upstream received %d calls, want 1", n)
				}
			})
		})
	}
}

// TestMCPElicitedCallFollowsTheCatalog: a 2025-11-25 client asked on its
// session whether to send a call answers within minutes; a tool disabled
// meanwhile is not sent on that answer (review68: the call decided before
// the question was sent as decided then).
func TestMCPElicitedCallFollowsTheCatalog(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newRoundTripEnv(t, st, "")
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
			ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				// While the person reads the question, the administrator
				// disables the tool.
				if code, body := e.do("PATCH", "/v1/plugins/delete_repo", adminToken, map[string]string{"status": "1"}); code != http.StatusOK {
					t.Errorf("disable: %d %v", code, body)
				}
				return &sdk.ElicitResult{Action: "accept"}, nil
			}}).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(e.seven)}},
			&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "delete_repo", Arguments: map[string]any{"repo": "r"}})
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		if !res.IsError || !strings.Contains(text, "plugin_disabled") || e.deletes() != 0 {
			t.Fatalf("approved after the tool was disabled: %s; %d sent", text, e.deletes())
		}
	})
}
