package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestQuotaInRuns: a tool call over its limit in a run is not sent; the
// model gets the limit and the reset as the tool's output and the loop
// goes on. A run token budget caps max_tokens to what is left, counts
// what each model call spent (estimated when the endpoint reports none),
// and stops the run with budget_exhausted, its messages kept.
func TestQuotaInRuns(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"refunded":true}`) })
		llm := openaitest.New(t)
		e := newEnv(t, st, withModel(llm))
		if code, body := e.do("POST", "/v1/plugins", adminToken, quotaPlugin("refund", "POST", up.URL)); code != http.StatusCreated {
			t.Fatalf("add plugin: %d %v", code, body)
		}
		for _, r := range []map[string]any{
			{"name": "refund-daily", "plugins": []string{"refund"}, "calls": 1, "window": "day"},
			{"name": "tokens-7", "user_id": 7, "run_tokens_per_day": 1000},
		} {
			if code, body := e.do("POST", "/v1/quotas/rules", adminToken, r); code != http.StatusCreated {
				t.Fatalf("add rule: %d %v", code, body)
			}
		}
		refund := openaitest.ToolCall{Name: "refund", Arguments: `{}`}
		llm.Script(
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{refund}, Usage: openai.Usage{PromptTokens: 300, CompletionTokens: 20, TotalTokens: 320}},
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{refund}, Usage: openai.Usage{PromptTokens: 350, CompletionTokens: 20, TotalTokens: 370}},
			openaitest.Turn{Content: "The refund was made; another must wait until tomorrow."}, // no usage: estimated
		)
		run := map[string]any{"user_id": 7, "plugin_names": []string{"refund"},
			"messages": []map[string]string{{"role": "user", "content": "refund order 1 twice"}}}
		code, reply := e.do("POST", "/v1/runs", serviceToken, run)
		if code != http.StatusOK || reply["status"] != "completed" {
			t.Fatalf("run: %d %v", code, reply)
		}
		steps := reply["steps"].([]any)
		if len(steps) != 2 || steps[0].(map[string]any)["status"] != "ok" || steps[1].(map[string]any)["status"] != "refused" {
			t.Fatalf("steps: %v", steps)
		}
		if n := len(up.received()); n != 1 {
			t.Fatalf("the upstream received %d calls, want 1", n)
		}
		var toolOut string
		for _, m := range reply["messages"].([]any) {
			if m := m.(map[string]any); m["role"] == "tool" {
				toolOut = m["content"].(string)
			}
		}
		if !strings.Contains(toolOut, "limit reached: 1 calls a day for refund, resets at ") {
			t.Fatalf("the model's tool output: %q", toolOut)
		}
		// max_tokens: the whole budget, then what was left.
		reqs := llm.Requests()
		for i, want := range []int{1000, 680, 310} {
			var body struct {
				MaxTokens int `json:"max_tokens"`
			}
			json.Unmarshal(reqs[i], &body)
			if body.MaxTokens != want {
				t.Errorf("model call %d: max_tokens %d, want %d", i+1, body.MaxTokens, want)
			}
		}
		code, use := e.do("GET", "/v1/quotas?user_id=7", serviceToken, nil)
		var spent float64
		for _, q := range use["quotas"].([]any) {
			if q := q.(map[string]any); q["rule"] == "tokens-7" {
				spent = q["used"].(float64)
			}
		}
		if code != http.StatusOK || spent <= 690 || spent >= 1000 {
			t.Fatalf("run tokens used: %d %v; want 690 and an estimate of the last call", code, use)
		}

		// The next run spends the rest in one call and stops before the
		// second, its messages kept.
		llm.Script(
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "refund", Arguments: `{}`}}, Usage: openai.Usage{PromptTokens: 500, CompletionTokens: 20, TotalTokens: 520}},
		)
		code, reply = e.do("POST", "/v1/runs", serviceToken, run)
		if code != http.StatusOK || reply["status"] != "budget_exhausted" || len(reply["messages"].([]any)) != 2 ||
			!strings.Contains(errMessage(reply), "run token budget reached: 1000 model tokens a day") {
			t.Fatalf("over budget: %d %v", code, reply)
		}
		if llm.Pending() != 0 {
			t.Fatalf("%d scripted turns left", llm.Pending())
		}
		// A user without a run rule is not limited.
		llm.Script(openaitest.Turn{Content: "ok", Usage: openai.Usage{TotalTokens: 5000}})
		run["user_id"] = 8
		if code, reply := e.do("POST", "/v1/runs", serviceToken, run); code != http.StatusOK || reply["status"] != "completed" {
			t.Fatalf("user 8: %d %v", code, reply)
		}
	})
}

// TestRunTokensCountedWhenCut: a model call cut off — its run's client
// gone while the model answered — is counted against the user's run
// token budget (its usage, else its estimate), so that a per-user token
// disconnecting before every answer cannot run the model without end
// past a spent budget (review64: such a call was never counted).
func TestRunTokensCountedWhenCut(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		llm := openaitest.New(t)
		e := newEnv(t, st, withModel(llm))
		if code, body := e.do("POST", "/v1/quotas/rules", adminToken, map[string]any{"name": "tokens-7", "user_id": 7, "run_tokens_per_day": 1000}); code != http.StatusCreated {
			t.Fatalf("add rule: %d %v", code, body)
		}
		_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "t"})
		userToken := tok["token"].(string)
		used := func() float64 {
			_, use := e.do("GET", "/v1/quotas?user_id=7", serviceToken, nil)
			for _, q := range use["quotas"].([]any) {
				if q := q.(map[string]any); q["rule"] == "tokens-7" {
					return q["used"].(float64)
				}
			}
			return 0
		}
		// A prompt of some 2,000 tokens (estimated), answered by a model
		// the client does not wait for.
		llm.Script(openaitest.Turn{Hang: true})
		body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": strings.Repeat("summarise this ", 500)}}})
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/runs", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+userToken)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("the run answered %d before the model did", resp.StatusCode)
		}
		deadline := time.Now().Add(3 * time.Second)
		for used() < 1000 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := used(); n < 1000 {
			t.Fatalf("run tokens used after a cut model call: %v, want its prompt's estimate (over 1,000)", n)
		}
		// Spent: the next run stops before the model is called.
		calls := len(llm.Requests())
		code, reply := e.do("POST", "/v1/runs", userToken, map[string]any{"messages": []map[string]string{{"role": "user", "content": "again"}}})
		if code != http.StatusOK || reply["status"] != "budget_exhausted" || len(llm.Requests()) != calls {
			t.Fatalf("the next run: %d %v, %d model calls; want budget_exhausted, none", code, reply, len(llm.Requests())-calls)
		}
	})
}
