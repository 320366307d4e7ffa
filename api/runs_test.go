package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// withModel gives the server an LLM loop on the scripted model.
func withModel(llm *openaitest.Server) func(*api.Server) {
	return func(s *api.Server) {
		s.Runner = &loop.Runner{Client: loop.NewClient(llm.Config()), Executor: s.Executor, DefaultModel: "scripted",
			LLMTimeout: 2 * time.Second, LLMBackoff: time.Millisecond}
	}
}

// seedPayload is seed 001's runtime payload: the plugin as RuoYi builds it
// from sys_ai_plugin, the user's decrypted credentials, the messages.
func seedPayload(t *testing.T, url string, extra map[string]any) map[string]any {
	doc, err := json.Marshal(mustParseSeed(t, url))
	if err != nil {
		t.Fatal(err)
	}
	p := map[string]any{
		"user_id":     "7",
		"messages":    []map[string]string{{"role": "user", "content": "查一下字节跳动"}},
		"plugins":     []json.RawMessage{doc},
		"credentials": map[string]string{"QCC_KEY": qccKey, "QCC_SECRET": qccSecret},
		"model":       "qwen-max",
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func mustParseSeed(t *testing.T, url string) map[string]any {
	var out map[string]any
	std := seedPlugin(t, url)
	// The seed carries // comments: the API takes plain JSON in payloads.
	if err := json.Unmarshal(stripComments(std), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func stripComments(s string) []byte {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "//"); i >= 0 && !strings.Contains(line[:i], "http") {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return []byte(b.String())
}

func TestRunSeedPayload(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"Status":"200","Result":[{"Name":"北京字节跳动科技有限公司"}]}`)
		})
		llm := openaitest.New(t)
		e := newEnv(t, st, withModel(llm))
		llm.Script(
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "search_company_basic", Arguments: `{"keyword":"字节跳动"}`}},
				Usage: openai.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}},
			openaitest.Turn{Content: "北京字节跳动科技有限公司。", Usage: openai.Usage{PromptTokens: 150, CompletionTokens: 10, TotalTokens: 160}},
		)
		code, reply := e.do("POST", "/v1/runs", serviceToken, seedPayload(t, up.URL, nil))
		if code != http.StatusOK || reply["status"] != "completed" {
			t.Fatalf("run: %d %v", code, reply)
		}
		if msg, _ := reply["message"].(map[string]any); msg["content"] != "北京字节跳动科技有限公司。" {
			t.Fatalf("final message: %v", reply["message"])
		}
		steps, _ := reply["steps"].([]any)
		if len(steps) != 1 || steps[0].(map[string]any)["status"] != "ok" || steps[0].(map[string]any)["http_status"] != float64(200) {
			t.Fatalf("steps: %v", reply["steps"])
		}
		if u, _ := reply["usage"].(map[string]any); u["total_tokens"] != float64(280) {
			t.Fatalf("usage not summed: %v", reply["usage"])
		}
		if got := up.received(); len(got) != 1 || got[0].header.Get("Token") != qccKey {
			t.Fatalf("upstream: %v", got)
		}
		// Nothing of execution, auth or credentials reached the model.
		for _, b := range llm.Requests() {
			for _, secret := range []string{up.URL, "127.0.0.1", qccKey, qccSecret, "QCC_KEY", "Timespan", "execution", "auth_config"} {
				if strings.Contains(string(b), secret) {
					t.Fatalf("the model saw %q", secret)
				}
			}
		}
		// Stored: the same body later, with the request's messages, the
		// user and the times (issue 51), and the records carry the run id.
		runID := reply["run_id"].(string)
		code, again := e.do("GET", "/v1/runs/"+runID, serviceToken, nil)
		if msgs, _ := json.Marshal(again["request_messages"]); string(msgs) != `[{"content":"查一下字节跳动","role":"user"}]` ||
			again["user_id"] != float64(7) || again["create_time"] == nil || again["update_time"] == nil {
			t.Errorf("GET run: what it keeps of the request: %s %v %v", msgs, again["user_id"], again["create_time"])
		}
		for _, k := range []string{"request_messages", "user_id", "create_time", "update_time"} {
			delete(again, k)
		}
		a, _ := json.Marshal(again)
		b, _ := json.Marshal(reply)
		if code != http.StatusOK || string(a) != string(b) {
			t.Fatalf("GET run: %d\n%s\nwant\n%s", code, a, b)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.rec.Close(ctx)
		if code, list := e.do("GET", "/v1/executions?run_id="+runID, adminToken, nil); code != 200 || len(list["executions"].([]any)) != 1 {
			t.Fatalf("executions of the run: %v", list)
		}
	})
}

func TestRunPayloadErrors(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	llm := openaitest.New(t)
	e := newEnv(t, st, withModel(llm))
	bad := mustParseSeed(t, up.URL)
	bad["execution"].(map[string]any)["method"] = "FETCH"
	badDoc, _ := json.Marshal(bad)
	code, body := e.do("POST", "/v1/runs", serviceToken, seedPayload(t, up.URL, map[string]any{"plugins": []json.RawMessage{badDoc}}))
	if code != http.StatusBadRequest || !strings.Contains(errMessage(body), `plugins[0].execution.method: \"FETCH\" is not an HTTP method`) {
		t.Fatalf("invalid plugin: %d %v", code, body)
	}
	// A newcomer's mistakes name the field, not a Go type or an empty path.
	for _, tt := range []struct {
		payload map[string]any
		want    string
	}{
		{map[string]any{"plugins": []any{"search_company_basic"}},
			"invalid request: plugins[0]: got a string, want a protocol v1 document (an object); a catalog plugin is named by the field plugin_names"},
		{map[string]any{"plugins": []any{[]any{}}}, "invalid request: plugins[0]: "},
		{map[string]any{"fixed_params": map[string]any{"page_index": 1}}, "fixed_params.page_index: expected an object, got number"},
	} {
		code, body := e.do("POST", "/v1/runs", serviceToken, seedPayload(t, up.URL, tt.payload))
		errObj, _ := body["error"].(map[string]any)
		if msg, _ := errObj["message"].(string); code != http.StatusBadRequest || !strings.HasPrefix(msg, tt.want) || strings.Contains(msg, "].:") {
			t.Errorf("%v: %d %s, want 400 %q", tt.payload, code, msg, tt.want)
		}
	}
	code, body = e.do("POST", "/v1/runs", serviceToken, seedPayload(t, up.URL, map[string]any{"plugin_names": []string{"nope"}}))
	if code != http.StatusBadRequest || !strings.Contains(errMessage(body), "plugin_names[0]") {
		t.Fatalf("unknown plugin name: %d %v", code, body)
	}
	code, body = e.do("POST", "/v1/runs", serviceToken, seedPayload(t, up.URL, map[string]any{"messages": []map[string]string{{"role": "wizard", "content": "x"}}}))
	if code != http.StatusBadRequest || !strings.Contains(errMessage(body), "messages[0].role") {
		t.Fatalf("invalid message: %d %v", code, body)
	}
	code, body = e.do("POST", "/v1/runs", serviceToken, `{"messages": "hello"}`)
	if code != http.StatusBadRequest || !strings.Contains(errMessage(body), "messages") {
		t.Fatalf("malformed payload: %d %v", code, body)
	}
	if len(llm.Requests()) != 0 {
		t.Fatal("an invalid payload reached the model")
	}
	// A failing model: 502 with the partial trace, stored as failed.
	for range 5 {
		llm.Script(openaitest.Turn{Status: 500})
	}
	code, body = e.do("POST", "/v1/runs", serviceToken, seedPayload(t, up.URL, nil))
	if code != http.StatusBadGateway || body["status"] != "failed" || errMessage(body) == "null" {
		t.Fatalf("LLM failure: %d %v", code, body)
	}
	if code, stored := e.do("GET", "/v1/runs/"+body["run_id"].(string), serviceToken, nil); code != 200 || stored["status"] != "failed" {
		t.Fatalf("stored failed run: %v", stored)
	}
	// A model that never answers: 504.
	llm.Script(openaitest.Turn{Hang: true})
	code, body = e.do("POST", "/v1/runs", serviceToken, seedPayload(t, up.URL, nil))
	if code != http.StatusGatewayTimeout {
		t.Fatalf("LLM timeout: %d %v", code, body)
	}
}

func TestRunStreaming(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"Status":"200"}`) })
	llm := openaitest.New(t)
	e := newEnv(t, st, withModel(llm))
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "search_company_basic", Arguments: `{"keyword":"字节跳动"}`}}, Chunk: 3, WireChunk: 7},
		openaitest.Turn{Content: "完成了。", Chunk: 1},
	)
	body, _ := json.Marshal(seedPayload(t, up.URL, map[string]any{"options": map[string]any{"stream": true}}))
	req, _ := http.NewRequest("POST", e.url+"/v1/runs", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+serviceToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var names []string
	var last map[string]any
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			if len(names) == 0 || names[len(names)-1] != n {
				names = append(names, n)
			}
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var v map[string]any
			json.Unmarshal([]byte(d), &v)
			if name == "message.delta" {
				text.WriteString(v["content"].(string))
			}
			last = v
		}
	}
	want := "run.started,tool.started,tool.completed,message.delta,run.completed"
	if strings.Join(names, ",") != want {
		t.Fatalf("events %v, want %s", names, want)
	}
	if text.String() != "完成了。" || last["status"] != "completed" {
		t.Fatalf("deltas %q, last %v", text.String(), last)
	}
}

func TestRunCancelledByClient(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	llm := openaitest.New(t)
	e := newEnv(t, st, withModel(llm))
	llm.Script(openaitest.Turn{Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	body, _ := json.Marshal(seedPayload(t, up.URL, nil))
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/runs", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+serviceToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Read run.started for the id, then walk away.
	sc := bufio.NewScanner(resp.Body)
	var runID string
	for runID == "" && sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var v map[string]any
			json.Unmarshal([]byte(d), &v)
			runID, _ = v["run_id"].(string)
		}
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, run := e.do("GET", "/v1/runs/"+runID, serviceToken, nil); run["status"] == "cancelled" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the run was not stored as cancelled after the client left")
}

// runsDocPayload is the payload docs/runs.md shows, its plugin aimed at
// url.
func runsDocPayload(t *testing.T, url string) string {
	page, err := os.ReadFile("../docs/runs.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(page), "```json\n")
	block, _, _ = strings.Cut(block, "```")
	if !strings.Contains(block, `"base_url": "http://api.qichacha.com/ECIV4/Search"`) {
		t.Fatalf("docs/runs.md's first JSON block is not seed 001's payload: %s", block)
	}
	return strings.Replace(block, "http://api.qichacha.com", url, 1)
}

// TestRunsDocPayload: the payload docs/runs.md shows runs as the page
// says, and an invalid one is answered 400 naming its field whether or
// not an LLM is configured (newcomer 76: without one, every payload,
// however wrong, was answered 503 llm_not_configured, so a RuoYi
// developer wiring payloads up first never saw the field named).
func TestRunsDocPayload(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"Status":"200","Result":[{"Name":"北京字节跳动科技有限公司","OperName":"张利东"}]}`)
	})
	payload := runsDocPayload(t, up.URL)
	bad := strings.Replace(payload, `"method": "GET"`, `"method": "FETCH"`, 1)
	noLLM := newEnv(t, st)
	if code, body := noLLM.do("POST", "/v1/runs", serviceToken, bad); code != http.StatusBadRequest ||
		!strings.Contains(errMessage(body), `plugins[0].execution.method: \"FETCH\" is not an HTTP method`) {
		t.Errorf("invalid payload, no LLM: %d %v", code, body)
	}
	if code, body := noLLM.do("POST", "/v1/runs", serviceToken, payload); code != http.StatusServiceUnavailable ||
		!strings.Contains(errMessage(body), "llm_not_configured") {
		t.Errorf("the page's payload, no LLM: %d %v", code, body)
	}
	llm := openaitest.New(t)
	e := newEnv(t, st, withModel(llm))
	llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "search_company_basic", Arguments: `{"keyword":"字节跳动"}`}}},
		openaitest.Turn{Content: "北京字节跳动科技有限公司。"})
	code, reply := e.do("POST", "/v1/runs", serviceToken, payload)
	steps, _ := reply["steps"].([]any)
	if code != http.StatusOK || reply["status"] != "completed" || len(steps) != 1 || steps[0].(map[string]any)["status"] != "ok" {
		t.Fatalf("the page's payload: %d %v", code, reply)
	}
	if got := up.received(); len(got) != 1 || got[0].header.Get("Token") != "sk-123" || !strings.Contains(got[0].uri, "page_index=1") {
		t.Fatalf("upstream: %v", got)
	}
	// A payload naming no model where no default is configured is one
	// more field named, before a run is stored (it was a stored failed
	// run, 400 invalid_request, that did not say which setting).
	noDefault := newEnv(t, st, withModel(llm), func(s *api.Server) { s.Runner.DefaultModel = "" })
	_, before := noDefault.do("GET", "/v1/runs", serviceToken, nil)
	code, body := noDefault.do("POST", "/v1/runs", serviceToken, strings.Replace(payload, `"model": "qwen-max",`, "", 1))
	if errObj, _ := body["error"].(map[string]any); code != http.StatusBadRequest || errObj["code"] != "invalid_payload" ||
		!strings.Contains(errMessage(body), "model: required") || !strings.Contains(errMessage(body), "BLINDEXEC_LLM_MODEL") {
		t.Errorf("no model: %d %v", code, body)
	}
	if _, after := noDefault.do("GET", "/v1/runs", serviceToken, nil); len(after["runs"].([]any)) != len(before["runs"].([]any)) {
		t.Errorf("a payload without a model stored a run: %v", after["runs"])
	}
}
