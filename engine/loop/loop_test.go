package loop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/plugins"
)

// newRunner runs against the scripted model with a real executor whose
// upstream client reaches loopback only.
func newRunner(t *testing.T, llm *openaitest.Server) *loop.Runner {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	exec := engine.NewExecutor(egresstest.Client(t))
	exec.Logger = log
	return &loop.Runner{
		Client:       loop.NewClient(llm.Config()),
		Executor:     exec,
		DefaultModel: "gpt-test",
		LLMBackoff:   time.Millisecond,
		LLMTimeout:   30 * time.Second,
		Logger:       log,
	}
}

// newUpstream is a real HTTP server on loopback.
func newUpstream(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func parsePlugin(t *testing.T, doc string) *plugins.Plugin {
	t.Helper()
	p, err := plugins.Parse([]byte(doc)) // not ParseJSON: its plugins are shared, and TestValidate edits them
	if err != nil {
		t.Fatalf("plugin: %v", err)
	}
	return p
}

// echoPlugin is a GET tool whose upstream answers {"q": keyword}.
func echoPlugin(t *testing.T, name, baseURL string) *plugins.Plugin {
	return parsePlugin(t, fmt.Sprintf(`{
		"name": %q, "description": "Looks a keyword up.",
		"parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
		"execution": {"method": "GET", "base_url": %q}
	}`, name, baseURL))
}

func echo(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"q": r.URL.Query().Get("q")})
}

func user(text string) []openai.ChatCompletionMessage {
	return []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}}
}

func call(id, name, args string) openaitest.ToolCall {
	return openaitest.ToolCall{ID: id, Name: name, Arguments: args}
}

// overlap counts the upstream requests in flight and their peak.
type overlap struct {
	mu       sync.Mutex
	in, peak int
}

func (o *overlap) enter() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.in++
	o.peak = max(o.peak, o.in)
}

func (o *overlap) leave() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.in--
}

// sendFunc decides with an executor and sends with send.
type sendFunc struct {
	loop.ToolExecutor
	send func(context.Context, *engine.Plan) (*engine.Result, error)
}

func (f sendFunc) Send(ctx context.Context, p *engine.Plan) (*engine.Result, error) {
	return f.send(ctx, p)
}

// events collects what a run emits.
type events []loop.Event

func (e *events) emit(ev loop.Event) { *e = append(*e, ev) }

func (e events) names() []string {
	var out []string
	for _, ev := range e {
		out = append(out, ev.Name)
	}
	return out
}

func wantStatus(t *testing.T, r *loop.Reply, status string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %q (error %+v), want %q", r.Status, r.Error, status)
	}
}

// toolContents are the tool messages of a reply, in order.
func toolContents(r *loop.Reply) (ids, contents []string) {
	for _, m := range r.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			ids = append(ids, m.ToolCallID)
			contents = append(contents, m.Content)
		}
	}
	return ids, contents
}

// TestToolBindingHidesEngineConfig: the model sees name, description and
// the parameters it fills; execution, auth, credentials and fixed params
// reach the upstream only.
func TestToolBindingHidesEngineConfig(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			var got *http.Request
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				got = r.Clone(context.Background())
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"Result":[{"Name":"北京字节跳动科技有限公司","Status":"存续"}]}`)
			})
			p := parsePlugin(t, fmt.Sprintf(`{
				"schema_version": "v1",
				"name": "search_company_basic",
				"description": "根据关键词查询企业的基础工商信息。",
				"parameters": {"type": "object", "properties": {
					"keyword": {"type": "string", "description": "企业名称关键词"},
					"page_index": {"type": "integer", "default": 1},
					"region_code": {"type": "string"}
				}, "required": ["keyword", "region_code"]},
				"execution": {"method": "GET", "base_url": %q, "param_placement": "query",
					"headers": {"X-Exec-Header": "exec-header-value-77"}, "query": {"tenant": "exec-query-value-88"}},
				"auth_config": {"type": "api_key", "mapping": [
					{"source": "QCC_KEY", "target": "X-Qcc-Token", "location": "header"},
					{"source": "QCC_SECRET", "target": "qcc_sig", "location": "query"}]},
				"fixed_params": {"tenant_code": "plugin-fixed-value-55"}
			}`, up.URL+"/ECIV4/Search"))

			llm := openaitest.New(t)
			llm.Script(
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_1", "search_company_basic", `{"keyword":"字节跳动"}`)}, Chunk: 3},
				openaitest.Turn{Content: "北京字节跳动科技有限公司，存续。", Chunk: 2},
			)
			reply := newRunner(t, llm).Run(t.Context(), loop.Request{
				UserID:      7,
				Messages:    user("查一下字节跳动"),
				Plugins:     []*plugins.Plugin{p},
				Credentials: map[string]string{"QCC_KEY": "sk-secret-value-11", "QCC_SECRET": "secret-sig-22"},
				FixedParams: map[string]map[string]any{"search_company_basic": {"region_code": "region-fixed-value-66"}},
				Options:     loop.Options{Stream: stream},
			}, nil)
			wantStatus(t, reply, loop.StatusCompleted)

			// The call was made blind, with everything the model never saw.
			if got == nil {
				t.Fatal("the upstream received nothing")
			}
			q := got.URL.Query()
			for k, want := range map[string]string{"keyword": "字节跳动", "region_code": "region-fixed-value-66", "tenant": "exec-query-value-88", "qcc_sig": "secret-sig-22", "page_index": ""} {
				if q.Get(k) != want {
					t.Errorf("upstream query %s = %q, want %q", k, q.Get(k), want)
				}
			}
			if h := got.Header.Get("X-Qcc-Token"); h != "sk-secret-value-11" {
				t.Errorf("upstream X-Qcc-Token = %q", h)
			}

			reqs := llm.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the model received %d requests, want 2", len(reqs))
			}
			forbidden := []string{
				up.Listener.Addr().String(), "127.0.0.1", "ECIV4", "base_url", "execution", "param_placement",
				"X-Exec-Header", "exec-header-value-77", "tenant", "exec-query-value-88",
				"auth_config", "api_key", "QCC_KEY", "QCC_SECRET", "X-Qcc-Token", "qcc_sig",
				"sk-secret-value-11", "secret-sig-22", "region_code", "region-fixed-value-66", "plugin-fixed-value-55",
			}
			for i, body := range reqs {
				for _, s := range forbidden {
					if bytes.Contains(body, []byte(s)) {
						t.Errorf("model request %d contains %q:\n%s", i+1, s, body)
					}
				}
			}
			var sent openai.ChatCompletionRequest
			if err := json.Unmarshal(reqs[0], &sent); err != nil {
				t.Fatal(err)
			}
			if len(sent.Tools) != 1 || sent.Tools[0].Function.Name != "search_company_basic" ||
				sent.Tools[0].Function.Description != "根据关键词查询企业的基础工商信息。" {
				t.Fatalf("tools sent = %+v", sent.Tools)
			}
			var params struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			}
			raw, _ := json.Marshal(sent.Tools[0].Function.Parameters)
			if err := json.Unmarshal(raw, &params); err != nil {
				t.Fatal(err)
			}
			if len(params.Properties) != 2 || params.Properties["keyword"] == nil || params.Properties["page_index"] == nil ||
				fmt.Sprint(params.Required) != "[keyword]" {
				t.Errorf("parameters sent = %s", raw)
			}
			if reply.Message.Content != "北京字节跳动科技有限公司，存续。" {
				t.Errorf("final message = %q", reply.Message.Content)
			}
		})
	}
}

// TestParallelToolCalls: two calls of one turn run at once, and their
// results go back in the order the model asked even when they finish in
// the other order.
func TestParallelToolCalls(t *testing.T) {
	// Each request waits (bounded) for the other; the peak number in
	// flight shows whether they overlapped.
	var calls overlap
	var arrived sync.WaitGroup
	arrived.Add(2)
	bothIn := make(chan struct{})
	go func() { arrived.Wait(); close(bothIn) }()
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		calls.enter()
		arrived.Done()
		select {
		case <-bothIn:
		case <-time.After(5 * time.Second): // run sequentially: fail, not hang
		}
		calls.leave()
		echo(w, r)
	})
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{
			call("call_a", "lookup", `{"q":"first"}`),
			call("call_b", "lookup", `{"q":"second"}`),
		}},
		openaitest.Turn{Content: "done"},
	)
	// The first call finishes last: it returns only once the run has
	// emitted the second one's tool.completed. (Waiting for the second
	// call's executor to return was not enough: both goroutines then
	// raced to report.)
	r := newRunner(t, llm)
	secondReported := make(chan struct{})
	inner := r.Executor
	r.Executor = sendFunc{inner, func(ctx context.Context, p *engine.Plan) (*engine.Result, error) {
		res, err := inner.Send(ctx, p)
		if !strings.Contains(string(res.Output), "second") {
			select {
			case <-secondReported:
			case <-time.After(5 * time.Second): // run sequentially: fail, not hang
			}
		}
		return res, err
	}}
	var ev events
	reply := r.Run(t.Context(), loop.Request{
		Messages: user("look both up"),
		Plugins:  []*plugins.Plugin{echoPlugin(t, "lookup", up.URL)},
	}, func(e loop.Event) {
		ev.emit(e)
		if st, ok := e.Data.(loop.Step); ok && e.Name == loop.EventToolCompleted && st.ToolCallID == "call_b" {
			close(secondReported)
		}
	})
	wantStatus(t, reply, loop.StatusCompleted)
	if calls.peak != 2 {
		t.Error("the two tool calls did not run concurrently")
	}
	ids, contents := toolContents(reply)
	if fmt.Sprint(ids) != "[call_a call_b]" || contents[0] != `{"q":"first"}` || contents[1] != `{"q":"second"}` {
		t.Errorf("tool results = %v %v, want call_a then call_b", ids, contents)
	}
	if len(reply.Steps) != 2 || reply.Steps[0].ToolCallID != "call_a" || reply.Steps[1].Index != 2 {
		t.Errorf("steps = %+v", reply.Steps)
	}
	var completed []string
	for _, e := range ev {
		if e.Name == loop.EventToolCompleted {
			completed = append(completed, e.Data.(loop.Step).ToolCallID)
		}
	}
	if fmt.Sprint(completed) != "[call_b call_a]" {
		t.Errorf("tool.completed order = %v, want the order they finished in", completed)
	}
	// The model's next request carries both results in its order.
	var next openai.ChatCompletionRequest
	json.Unmarshal(llm.Requests()[1], &next)
	n := len(next.Messages)
	if n != 4 || next.Messages[2].ToolCallID != "call_a" || next.Messages[3].ToolCallID != "call_b" {
		t.Errorf("second model request messages = %+v", next.Messages)
	}
}

// TestMaxConcurrency: with a limit of 1, calls run one after the other.
func TestMaxConcurrency(t *testing.T) {
	var calls overlap
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		calls.enter()
		time.Sleep(10 * time.Millisecond) // leave room for an overlap to show
		calls.leave()
		echo(w, r)
	})
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{
			call("c1", "lookup", `{"q":"1"}`), call("c2", "lookup", `{"q":"2"}`), call("c3", "lookup", `{"q":"3"}`),
		}},
		openaitest.Turn{Content: "done"},
	)
	r := newRunner(t, llm)
	r.MaxConcurrency = 1
	reply := r.Run(t.Context(), loop.Request{Messages: user("x"), Plugins: []*plugins.Plugin{echoPlugin(t, "lookup", up.URL)}}, nil)
	wantStatus(t, reply, loop.StatusCompleted)
	if calls.peak != 1 {
		t.Errorf("peak concurrency = %d, want 1", calls.peak)
	}
	if _, contents := toolContents(reply); fmt.Sprint(contents) != `[{"q":"1"} {"q":"2"} {"q":"3"}]` {
		t.Errorf("tool results = %v", contents)
	}
}

func TestMaxSteps(t *testing.T) {
	up := newUpstream(t, echo)
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c1", "lookup", `{"q":"1"}`)}, Usage: openai.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c2", "lookup", `{"q":"2"}`)}, Usage: openai.Usage{PromptTokens: 20, CompletionTokens: 3, TotalTokens: 23}},
	)
	var ev events
	reply := newRunner(t, llm).Run(t.Context(), loop.Request{
		Messages: user("loop forever"),
		Plugins:  []*plugins.Plugin{echoPlugin(t, "lookup", up.URL)},
		Options:  loop.Options{MaxSteps: 2},
	}, ev.emit)
	wantStatus(t, reply, loop.StatusMaxSteps)
	if reply.Error != nil {
		t.Errorf("error = %+v, want none", reply.Error)
	}
	if len(reply.Messages) != 4 || len(reply.Steps) != 2 || reply.Message == nil || reply.Message.ToolCalls[0].ID != "c2" {
		t.Errorf("messages = %d, steps = %d, message = %+v", len(reply.Messages), len(reply.Steps), reply.Message)
	}
	if reply.Usage.PromptTokens != 30 || reply.Usage.CompletionTokens != 5 || reply.Usage.TotalTokens != 35 {
		t.Errorf("usage = %+v, want the sum", reply.Usage)
	}
	if len(llm.Requests()) != 2 {
		t.Errorf("model calls = %d, want 2", len(llm.Requests()))
	}
	if names := ev.names(); names[len(names)-1] != loop.EventRunCompleted {
		t.Errorf("last event = %s", names[len(names)-1])
	}
}

// TestToolFailuresGoBackToModel: an HTTP error, arguments that are not
// JSON, an unknown tool and missing credentials each become that call's
// output; the run goes on.
func TestToolFailuresGoBackToModel(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"message":"database is down"}`)
	})
	keyed := parsePlugin(t, fmt.Sprintf(`{
		"name": "keyed", "description": "Needs a key.",
		"parameters": {"type": "object", "properties": {}},
		"execution": {"method": "GET", "base_url": %q},
		"auth_config": {"type": "bearer", "token": "KEYED_TOKEN"}
	}`, up.URL+"/keyed"))
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{
			call("c_http", "lookup", `{"q":"x"}`),
			call("c_json", "lookup", `{"q": "x"`),
			call("c_unknown", "no_such_tool", `{}`),
			call("c_creds", "keyed", `{}`),
			call("c_args", "lookup", `{"q": 42}`),
		}},
		openaitest.Turn{Content: "Sorry, the tools failed."},
	)
	reply := newRunner(t, llm).Run(t.Context(), loop.Request{
		Messages: user("try everything"),
		Plugins:  []*plugins.Plugin{echoPlugin(t, "lookup", up.URL+"/lookup"), keyed},
	}, nil)
	wantStatus(t, reply, loop.StatusCompleted)

	want := []struct{ status, code string }{
		{loop.StepError, `"code":"http_error"`},
		{loop.StepInvalidJSON, `"code":"invalid_json"`},
		{loop.StepUnknownTool, `"code":"unknown_tool"`},
		{loop.StepRefused, `"code":"missing_credentials"`},
		{loop.StepRefused, `"code":"invalid_arguments"`},
	}
	_, contents := toolContents(reply)
	if len(reply.Steps) != len(want) || len(contents) != len(want) {
		t.Fatalf("steps = %+v", reply.Steps)
	}
	for i, w := range want {
		if reply.Steps[i].Status != w.status || !strings.Contains(contents[i], w.code) {
			t.Errorf("call %d: status %q, content %s; want %q with %s", i, reply.Steps[i].Status, contents[i], w.status, w.code)
		}
		if !json.Valid([]byte(contents[i])) {
			t.Errorf("call %d: content is not JSON: %s", i, contents[i])
		}
	}
	if s := reply.Steps[0]; s.HTTPStatus != 500 || s.ExecutionID == "" || !strings.Contains(contents[0], `"http_status":500`) {
		t.Errorf("HTTP error step = %+v, content %s", s, contents[0])
	}
	if got := string(reply.Steps[1].Arguments); got != `"{\"q\": \"x\""` {
		t.Errorf("invalid arguments recorded as %s, want them as a JSON string", got)
	}
	if !strings.Contains(contents[2], "lookup") {
		t.Errorf("unknown tool output should list the tools: %s", contents[2])
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(paths) != "[/lookup]" {
		t.Errorf("upstream paths = %v, want only the valid call", paths)
	}
	// The model saw the errors.
	last := llm.Requests()[1]
	for _, code := range []string{"http_error", "invalid_json", "unknown_tool", "missing_credentials", "invalid_arguments"} {
		if !bytes.Contains(last, []byte(code)) {
			t.Errorf("the model did not see %s", code)
		}
	}
	if _, err := json.Marshal(reply); err != nil {
		t.Errorf("the reply does not marshal: %v", err)
	}
}

// TestStreamingSplitArguments: argument text split between any two
// characters, including inside its own JSON escapes, and a wire split at
// every byte offset, including inside UTF-8 characters, assembles to the
// exact text; two calls interleave by index.
func TestStreamingSplitArguments(t *testing.T) {
	const q = `字节跳动 "quoted" caf\u00e9 😀 back\\slash`
	args := `{"q":"` + strings.NewReplacer(`"`, `\"`).Replace(q) + `"}`
	var decoded string
	if err := json.Unmarshal([]byte(`"`+strings.NewReplacer(`"`, `\"`).Replace(q)+`"`), &decoded); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Query().Get("q"))
		mu.Unlock()
		echo(w, r)
	})
	llm := openaitest.New(t)
	r := newRunner(t, llm)
	plugin := echoPlugin(t, "lookup", up.URL)
	content := "Réponse: 字节跳动 👍"
	runes := len([]rune(args))
	for chunk := 1; chunk <= runes; chunk++ {
		llm.Script(
			openaitest.Turn{
				Content:   "查询中",
				ToolCalls: []openaitest.ToolCall{call("c1", "lookup", args), call("c2", "lookup", `{"q":"二"}`)},
				Chunk:     chunk, WireChunk: chunk%7 + 1, EscapeNonASCII: chunk%2 == 0,
			},
			openaitest.Turn{Content: content, Chunk: chunk, WireChunk: chunk % 5},
		)
		var ev events
		reply := r.Run(t.Context(), loop.Request{
			Messages: user("stream"),
			Plugins:  []*plugins.Plugin{plugin},
			Options:  loop.Options{Stream: true},
		}, ev.emit)
		wantStatus(t, reply, loop.StatusCompleted)
		tc := reply.Messages[0].ToolCalls
		if len(tc) != 2 || tc[0].Function.Arguments != args || tc[1].Function.Arguments != `{"q":"二"}` || tc[0].ID != "c1" || tc[1].Function.Name != "lookup" {
			t.Fatalf("chunk %d: assembled tool calls = %+v", chunk, tc)
		}
		if reply.Messages[0].Content != "查询中" || reply.Message.Content != content {
			t.Fatalf("chunk %d: contents = %q, %q", chunk, reply.Messages[0].Content, reply.Message.Content)
		}
		if string(reply.Steps[0].Arguments) != args {
			t.Fatalf("chunk %d: step arguments = %s", chunk, reply.Steps[0].Arguments)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < len(seen); i += 2 {
		if seen[i] != decoded && seen[i+1] != decoded {
			t.Fatalf("upstream got %q and %q, want %q among them", seen[i], seen[i+1], decoded)
		}
	}
}

// TestStreamingEvents: events come in order, deltas rebuild the content,
// usage is summed from the final usage chunks.
func TestStreamingEvents(t *testing.T) {
	up := newUpstream(t, echo)
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c1", "lookup", `{"q":"a"}`), call("c2", "lookup", `{"q":"b"}`)}, Chunk: 2,
			Usage: openai.Usage{PromptTokens: 11, CompletionTokens: 4, TotalTokens: 15}},
		openaitest.Turn{Content: "Hello, 世界! All done.", Chunk: 3,
			Usage: openai.Usage{PromptTokens: 30, CompletionTokens: 6, TotalTokens: 36}},
	)
	var ev events
	reply := newRunner(t, llm).Run(t.Context(), loop.Request{
		RunID:    "run-events",
		Messages: user("go"),
		Plugins:  []*plugins.Plugin{echoPlugin(t, "lookup", up.URL)},
		Options:  loop.Options{Stream: true},
	}, ev.emit)
	wantStatus(t, reply, loop.StatusCompleted)
	if reply.RunID != "run-events" {
		t.Errorf("run id = %q", reply.RunID)
	}
	if u := reply.Usage; u.PromptTokens != 41 || u.CompletionTokens != 10 || u.TotalTokens != 51 {
		t.Errorf("usage = %+v, want the sum of both calls", u)
	}
	names := ev.names()
	if names[0] != loop.EventRunStarted || names[len(names)-1] != loop.EventRunCompleted {
		t.Fatalf("events = %v", names)
	}
	if rs := ev[0].Data.(loop.RunStarted); rs.Model != "gpt-test" || fmt.Sprint(rs.Tools) != "[lookup]" {
		t.Errorf("run.started = %+v", rs)
	}
	started := map[string]int{}
	var text strings.Builder
	var deltas int
	for i, e := range ev {
		switch d := e.Data.(type) {
		case loop.ToolStarted:
			started[d.ToolCallID] = i
		case loop.Step:
			if j, ok := started[d.ToolCallID]; !ok || j > i || d.Status != loop.StepOK {
				t.Errorf("tool.completed %+v without an earlier tool.started", d)
			}
		case loop.MessageDelta:
			if len(started) != 2 || d.Turn != 2 {
				t.Errorf("message.delta %+v before the tools ran", d)
			}
			text.WriteString(d.Content)
			deltas++
		}
	}
	if text.String() != "Hello, 世界! All done." || deltas < 2 {
		t.Errorf("deltas (%d) = %q", deltas, text.String())
	}
	if ev[len(ev)-1].Data.(*loop.Reply) != reply {
		t.Error("run.completed does not carry the reply")
	}
	var sent struct {
		Stream        bool `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	json.Unmarshal(llm.Requests()[0], &sent)
	if !sent.Stream || !sent.StreamOptions.IncludeUsage {
		t.Errorf("stream request = %+v", sent)
	}
}

// TestOptionsReachModel: tool_choice on the first call only (a forced
// choice would never let the model answer), temperature 0 sent as ~0,
// parallel_tool_calls as given.
func TestOptionsReachModel(t *testing.T) {
	up := newUpstream(t, echo)
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c1", "lookup", `{"q":"a"}`)}},
		openaitest.Turn{Content: "ok"},
	)
	zero, no := float32(0), false
	reply := newRunner(t, llm).Run(t.Context(), loop.Request{
		Messages: user("go"),
		Plugins:  []*plugins.Plugin{echoPlugin(t, "lookup", up.URL)},
		Model:    "qwen-max",
		Options:  loop.Options{ToolChoice: "required", Temperature: &zero, ParallelToolCalls: &no},
	}, nil)
	wantStatus(t, reply, loop.StatusCompleted)
	var sent [2]map[string]any
	for i, b := range llm.Requests() {
		json.Unmarshal(b, &sent[i])
	}
	if sent[0]["tool_choice"] != "required" || sent[1]["tool_choice"] != nil {
		t.Errorf("tool_choice = %v then %v", sent[0]["tool_choice"], sent[1]["tool_choice"])
	}
	if temp, ok := sent[0]["temperature"].(float64); !ok || temp > 1e-6 {
		t.Errorf("temperature = %v", sent[0]["temperature"])
	}
	if sent[0]["parallel_tool_calls"] != false || sent[0]["model"] != "qwen-max" {
		t.Errorf("request = %v", sent[0])
	}
}

// TestLLMRetries: 429 and 5xx are retried, with backoff, up to LLMRetries.
func TestLLMRetries(t *testing.T) {
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{Status: http.StatusTooManyRequests, RetryAfter: "0"},
		openaitest.Turn{Status: http.StatusServiceUnavailable},
		openaitest.Turn{Status: http.StatusBadGateway},
		openaitest.Turn{Content: "finally"},
	)
	reply := newRunner(t, llm).Run(t.Context(), loop.Request{Messages: user("hi")}, nil)
	wantStatus(t, reply, loop.StatusCompleted)
	if n := len(llm.Requests()); n != 4 || reply.Message.Content != "finally" {
		t.Errorf("model calls = %d, message = %+v", n, reply.Message)
	}
}

// TestLLMRetryAfter: the server's Retry-After replaces the backoff.
func TestLLMRetryAfter(t *testing.T) {
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{Status: http.StatusTooManyRequests, RetryAfter: "0"},
		openaitest.Turn{Content: "ok"},
	)
	r := newRunner(t, llm)
	// Were Retry-After ignored, the wait would be at least half an hour
	// and the deadline below would cancel the run.
	r.LLMBackoff = time.Hour
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	wantStatus(t, r.Run(ctx, loop.Request{Messages: user("hi")}, nil), loop.StatusCompleted)
}

// TestLLMFailureKeepsTrace: a model that keeps failing ends the run as
// failed, llm_error (502), with what happened before.
func TestLLMFailureKeepsTrace(t *testing.T) {
	up := newUpstream(t, echo)
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c1", "lookup", `{"q":"a"}`)}},
		openaitest.Turn{Status: http.StatusInternalServerError},
		openaitest.Turn{Status: http.StatusInternalServerError},
		openaitest.Turn{Status: http.StatusInternalServerError},
	)
	r := newRunner(t, llm)
	r.LLMRetries = 2
	var ev events
	reply := r.Run(t.Context(), loop.Request{Messages: user("hi"), Plugins: []*plugins.Plugin{echoPlugin(t, "lookup", up.URL)}}, ev.emit)
	wantStatus(t, reply, loop.StatusFailed)
	if reply.Error == nil || reply.Error.Code != loop.CodeLLMError || reply.Error.HTTPStatus() != http.StatusBadGateway ||
		!strings.Contains(reply.Error.Message, "500") {
		t.Errorf("error = %+v", reply.Error)
	}
	if len(reply.Messages) != 2 || len(reply.Steps) != 1 || reply.Steps[0].Status != loop.StepOK {
		t.Errorf("partial trace: %d messages, steps %+v", len(reply.Messages), reply.Steps)
	}
	if n := len(llm.Requests()); n != 4 {
		t.Errorf("model calls = %d, want 1 + 3 attempts", n)
	}
	if names := ev.names(); names[len(names)-1] != loop.EventRunFailed || ev[len(ev)-1].Data.(*loop.Reply) != reply {
		t.Errorf("events = %v", names)
	}
	if _, err := json.Marshal(reply); err != nil {
		t.Errorf("the reply does not marshal: %v", err)
	}
}

func TestLLMTimeout(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			llm := openaitest.New(t)
			llm.Script(openaitest.Turn{Hang: true})
			r := newRunner(t, llm)
			r.LLMTimeout = 100 * time.Millisecond
			reply := r.Run(t.Context(), loop.Request{Messages: user("hi"), Options: loop.Options{Stream: stream}}, nil)
			wantStatus(t, reply, loop.StatusFailed)
			if reply.Error.Code != loop.CodeLLMTimeout || reply.Error.HTTPStatus() != http.StatusGatewayTimeout {
				t.Errorf("error = %+v", reply.Error)
			}
			if n := len(llm.Requests()); n != 1 {
				t.Errorf("model calls = %d; a timeout is not retried", n)
			}
		})
	}
}

func TestLLMMalformed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		raw    string
		want   string
	}{
		{"truncated JSON", false, `{"id":"x","choices":[{"index":0,"mess`, "model call"},
		{"no choices", false, `{"id":"x","object":"chat.completion","choices":[]}`, "no choices"},
		{"HTML", false, `<html>gateway</html>`, "model call"},
		{"bad chunk", true, "data: {\"choices\":[{\"delta\":\n\n", "model stream"},
		{"no finish_reason", true, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n", "finish_reason"},
		{"error event", true, "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n", "overloaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llm := openaitest.New(t)
			llm.Script(openaitest.Turn{Raw: tc.raw})
			reply := newRunner(t, llm).Run(t.Context(), loop.Request{Messages: user("hi"), Options: loop.Options{Stream: tc.stream}}, nil)
			wantStatus(t, reply, loop.StatusFailed)
			if reply.Error.Code != loop.CodeLLMError || !strings.Contains(reply.Error.Message, tc.want) {
				t.Errorf("error = %+v, want llm_error mentioning %q", reply.Error, tc.want)
			}
		})
	}
}

// TestCancel: a cancelled context (the client went away) ends the run as
// cancelled and cancels the tool call in flight.
func TestCancel(t *testing.T) {
	arrived := make(chan struct{})
	upstreamCancelled := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select {
		case <-r.Context().Done():
			close(upstreamCancelled)
		case <-time.After(10 * time.Second):
		}
	})
	llm := openaitest.New(t)
	llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c1", "lookup", `{"q":"slow"}`)}})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	var ev events
	reply := newRunner(t, llm).Run(ctx, loop.Request{Messages: user("hi"), Plugins: []*plugins.Plugin{echoPlugin(t, "lookup", up.URL)}}, ev.emit)
	wantStatus(t, reply, loop.StatusCancelled)
	if reply.Error == nil || reply.Error.Code != loop.CodeCancelled {
		t.Errorf("error = %+v", reply.Error)
	}
	select {
	case <-upstreamCancelled:
	case <-time.After(5 * time.Second):
		t.Error("the upstream call was not cancelled")
	}
	if len(reply.Steps) != 1 || reply.Steps[0].Status != loop.StepError {
		t.Errorf("steps = %+v", reply.Steps)
	}
	if names := ev.names(); names[len(names)-1] != loop.EventRunFailed {
		t.Errorf("events = %v", names)
	}
	if llm.Pending() != 0 || len(llm.Requests()) != 1 {
		t.Errorf("the model was called again after the cancel")
	}
}

func TestValidate(t *testing.T) {
	valid := func() loop.Request {
		return loop.Request{
			UserID:   1,
			Messages: user("hi"),
			Plugins: []*plugins.Plugin{
				echoPlugin(t, "a", "https://api.example.com/a"),
				echoPlugin(t, "b", "https://api.example.com/b"),
			},
		}
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	three := float32(3)
	for _, tc := range []struct {
		want   string
		mutate func(*loop.Request)
	}{
		{"messages: at least one", func(r *loop.Request) { r.Messages = nil }},
		{"messages[1].role: \"robot\"", func(r *loop.Request) {
			r.Messages = append(r.Messages, openai.ChatCompletionMessage{Role: "robot", Content: "x"})
		}},
		{"messages[0].content: required", func(r *loop.Request) { r.Messages[0].Content = "" }},
		{"messages[1].tool_call_id: \"nope\" answers no tool call", func(r *loop.Request) {
			r.Messages = append(r.Messages, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "nope", Content: "{}"})
		}},
		{"plugins[1].name: duplicate", func(r *loop.Request) { r.Plugins[1].Name = "a" }},
		{"plugins[0]: must be a plugin object", func(r *loop.Request) { r.Plugins[0] = nil }},
		{"plugins[0].execution.method: required", func(r *loop.Request) { r.Plugins[0].Execution.Method = "" }},
		{"fixed_params.zzz: no plugin", func(r *loop.Request) { r.FixedParams = map[string]map[string]any{"zzz": {"q": 1}} }},
		{"options.max_steps: must be between 1 and 50", func(r *loop.Request) { r.Options.MaxSteps = 51 }},
		{"options.temperature", func(r *loop.Request) { r.Options.Temperature = &three }},
		{"options.tool_choice: \"always\" is not", func(r *loop.Request) { r.Options.ToolChoice = "always" }},
		{"options.tool_search: \"sometimes\" is not", func(r *loop.Request) { r.Options.ToolSearch = "sometimes" }},
		{"options.pinned_tools[0]: \"zzz\" is not an enabled plugin", func(r *loop.Request) { r.Options.PinnedTools = []string{"zzz"} }},
		{"options.pinned_tools[1]: duplicate", func(r *loop.Request) { r.Options.PinnedTools = []string{"a", "a"} }},
		{"options.tool_choice: names \"zzz\"", func(r *loop.Request) {
			r.Options.ToolChoice = map[string]any{"type": "function", "function": map[string]any{"name": "zzz"}}
		}},
	} {
		r := valid()
		tc.mutate(&r)
		err := r.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
	// Run refuses an invalid request without calling the model.
	llm := openaitest.New(t)
	reply := newRunner(t, llm).Run(t.Context(), loop.Request{}, nil)
	wantStatus(t, reply, loop.StatusFailed)
	if reply.Error.Code != loop.CodeInvalidRequest || reply.Error.HTTPStatus() != http.StatusBadRequest || len(llm.Requests()) != 0 {
		t.Errorf("error = %+v", reply.Error)
	}
}

// TestExecutorPanic: a panicking executor becomes that call's error; the
// run goes on.
func TestExecutorPanic(t *testing.T) {
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c1", "lookup", `{"q":"a"}`)}},
		openaitest.Turn{Content: "recovered"},
	)
	r := newRunner(t, llm)
	r.Executor = sendFunc{r.Executor, func(context.Context, *engine.Plan) (*engine.Result, error) { panic("boom") }}
	reply := r.Run(t.Context(), loop.Request{Messages: user("hi"), Plugins: []*plugins.Plugin{echoPlugin(t, "lookup", "https://api.example.com")}}, nil)
	wantStatus(t, reply, loop.StatusCompleted)
	if _, contents := toolContents(reply); reply.Steps[0].Status != loop.StepError || !strings.Contains(contents[0], loop.CodeInternal) {
		t.Errorf("step %+v, content %v", reply.Steps[0], contents)
	}
}

// TestTextStaysText (issue 17, point 6): a text/plain or CSV answer reaches
// the model's tool message as the text, not as a JSON string literal.
func TestTextStaysText(t *testing.T) {
	const csv = "key,total\n\"a\",1\n"
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		io.WriteString(w, csv)
	})
	llm := openaitest.New(t)
	llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c1", "report", `{"q":"x"}`)}}, openaitest.Turn{Content: "done"})
	reply := newRunner(t, llm).Run(t.Context(), loop.Request{Messages: user("x"), Plugins: []*plugins.Plugin{echoPlugin(t, "report", up.URL)}}, nil)
	wantStatus(t, reply, loop.StatusCompleted)
	if _, contents := toolContents(reply); len(contents) != 1 || contents[0] != csv {
		t.Errorf("tool message = %q, want the CSV text %q", contents, csv)
	}
}

// TestLLMKeyNeverShown: a model endpoint (or a gateway before it)
// echoing the API key it was sent, in a JSON error or a plain body, on a
// plain or a streamed call, shows it in no run error, log line or event:
// the key is the operator's secret, the run's caller may be any user.
func TestLLMKeyNeverShown(t *testing.T) {
	const key = "sk-live-operator-0123456789abcdef"
	const chunk = `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":%s}]}` + "\n\n"
	for _, tc := range []struct {
		name, ct, body string
		stream         bool
		status         int
	}{
		{"JSON error", "application/json", `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error"}}`, false, 401},
		{"plain body", "text/plain", `invalid credentials: %s`, false, 401},
		{"JSON error, streamed", "application/json", `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error"}}`, true, 401},
		{"plain body, streamed", "text/html", `<p>denied: %s</p>`, true, 401},
		{"an answer", "application/json", `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"the key: %s"},"finish_reason":"stop"}]}`, false, 200},
		{"an event stream", "text/event-stream", fmt.Sprintf(chunk, `{"role":"assistant","content":"the key: %s"}`) +
			fmt.Sprintf(chunk, `{},"finish_reason":"stop"`) + "data: [DONE]\n\n", true, 200},
		{"an error event", "text/event-stream", `data: {"error":{"message":"bad key %s","type":"server_error"}}` + "\n\n", true, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ct)
				w.WriteHeader(tc.status)
				fmt.Fprintf(w, tc.body, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			}))
			defer srv.Close()
			cfg := openai.DefaultConfig(key)
			cfg.BaseURL = srv.URL + "/v1"
			var logs strings.Builder
			log := slog.New(slog.NewTextHandler(&logs, nil))
			r := &loop.Runner{Client: loop.NewClient(cfg), Executor: engine.NewExecutor(egresstest.Client(t)),
				DefaultModel: "gpt-test", LLMBackoff: time.Millisecond, Logger: log}
			var ev events
			r.LLMRetries = -1
			reply := r.Run(t.Context(), loop.Request{Messages: user("hi"), Options: loop.Options{Stream: tc.stream}}, ev.emit)
			b, _ := json.Marshal(reply)
			all := string(b) + logs.String() + fmt.Sprint(ev)
			if tc.status == 200 {
				wantStatus(t, reply, loop.StatusCompleted)
				if !strings.Contains(reply.Message.Content, "the key: [REDACTED]") {
					t.Errorf("the answer: %s", all)
				}
			} else if wantStatus(t, reply, loop.StatusFailed); !strings.Contains(all, fmt.Sprint(tc.status)) && !strings.Contains(all, "bad key") {
				t.Errorf("the failure does not say what happened: %s", all)
			}
			if strings.Contains(all, key) || strings.Contains(all, key[8:]) {
				t.Errorf("the API key shows: %s", all)
			}
		})
	}
}
