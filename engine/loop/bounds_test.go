package loop_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/plugins"
)

// Issue 30, point 4: a model answer over the limit fails the run, named,
// whether it streams or not.
func TestModelAnswerLimit(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			llm := openaitest.New(t)
			llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("a", "t", `{"q":"`+strings.Repeat("x", 5<<20)+`"}`)}})
			r := newRunner(t, llm)
			r.LLMRetries = -1
			reply := r.Run(t.Context(), loop.Request{Messages: user("hi"), Options: loop.Options{Stream: stream}}, nil)
			wantStatus(t, reply, loop.StatusFailed)
			if reply.Error.Code != loop.CodeLLMError || !strings.Contains(reply.Error.Message, "over the limit of 4194304 bytes (BLINDEXEC_LLM_MAX_RESPONSE_BYTES)") {
				t.Errorf("error = %+v", reply.Error)
			}
		})
	}
	// Within a raised limit the same answer is taken.
	llm := openaitest.New(t)
	llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("a", "t", `{"q":"`+strings.Repeat("x", 5<<20)+`"}`)}}, openaitest.Turn{Content: "ok"})
	r := newRunner(t, llm)
	r.MaxResponseBytes = 8 << 20
	wantStatus(t, r.Run(t.Context(), loop.Request{Messages: user("hi")}, nil), loop.StatusCompleted)
}

// Issue 30, point 4: at most MaxToolCalls of a turn are executed; the
// rest are answered to the model as not executed.
func TestToolCallsPerTurn(t *testing.T) {
	var hits atomic.Int32
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		echo(w, r)
	})
	var calls []openaitest.ToolCall
	for i := range 40 {
		calls = append(calls, call(fmt.Sprint("c", i), "t", `{"q":"x"}`))
	}
	llm := openaitest.New(t)
	llm.Script(openaitest.Turn{ToolCalls: calls}, openaitest.Turn{Content: "done"})
	reply := newRunner(t, llm).Run(t.Context(), loop.Request{Messages: user("hi"), Plugins: []*plugins.Plugin{echoPlugin(t, "t", up.URL)}}, nil)
	wantStatus(t, reply, loop.StatusCompleted)
	if n := hits.Load(); n != loop.DefaultMaxToolCalls {
		t.Errorf("%d calls reached the upstream, want %d", n, loop.DefaultMaxToolCalls)
	}
	ids, contents := toolContents(reply)
	if len(ids) != 40 || ids[39] != "c39" || !strings.Contains(contents[39], "not executed: at most 32 tool calls are executed per turn (BLINDEXEC_LLM_MAX_TOOL_CALLS)") ||
		reply.Steps[31].Status != loop.StepOK || reply.Steps[32].Status != loop.StepNotExecuted {
		t.Errorf("tool messages %d, last %q, steps %+v", len(ids), contents[len(contents)-1], reply.Steps[31:33])
	}
}

// Issue 30, point 4: a stored reply is cut to fit, its longest texts
// marked, valid JSON, the reply itself untouched.
func TestMarshalWithin(t *testing.T) {
	big := strings.Repeat("é", 50_000) // 100,000 bytes
	msg := openai.ChatCompletionMessage{Role: "assistant", Content: "short", ToolCalls: []openai.ToolCall{{ID: "a", Function: openai.FunctionCall{Name: "t", Arguments: `{"q":"` + big + `"}`}}}}
	r := &loop.Reply{RunID: "r", Status: loop.StatusCompleted, Message: &msg,
		Messages: []openai.ChatCompletionMessage{msg, {Role: "tool", ToolCallID: "a", Content: strings.Repeat("\"<>", 20_000)}},
		Steps:    []loop.Step{{Index: 1, Tool: "t", Arguments: json.RawMessage(`{"q":"` + big + `"}`), Status: loop.StepOK}}}
	whole, _ := json.Marshal(r)
	for _, max := range []int{len(whole), 200_000, 50_000, 5_000} {
		b, err := loop.MarshalWithin(r, max)
		var back loop.Reply
		if err != nil || len(b) > max || json.Unmarshal(b, &back) != nil {
			t.Fatalf("max %d: %d bytes, %v", max, len(b), err)
		}
		if max == len(whole) {
			if back.Cut || string(b) != string(whole) {
				t.Errorf("a reply within the limit was changed")
			}
			continue
		}
		if !back.Cut || back.Messages[0].Content != "short" || !strings.Contains(back.Messages[1].Content, "…[cut: ") || !strings.Contains(string(back.Steps[0].Arguments), "more bytes]") {
			t.Errorf("max %d: %.300s", max, b)
		}
	}
	if len(r.Messages[1].Content) != 60_000 || len(r.Steps[0].Arguments) != len(big)+8 {
		t.Error("MarshalWithin changed the reply")
	}
	// Below what the fields besides the texts take: the texts go.
	b, err := loop.MarshalWithin(r, 300)
	if err != nil || len(b) > 300 || !strings.Contains(string(b), `"cut":true`) {
		t.Errorf("max 300: %s %v", b, err)
	}
}
