package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// Issue 13, point 6: one user at the limit of calls (or runs) in flight
// gets 429 with Retry-After; other users are not held up, and the slot
// comes back when the call ends.
func TestPerUserLimits(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("q") == "block" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, `{}`)
	})
	llm := openaitest.New(t)
	e := newEnv(t, st, withModel(llm), func(s *api.Server) {
		s.Executor.Limiter = &engine.UserLimiter{MaxCalls: 1, MaxRuns: 1, RetryAfter: 2 * time.Second}
	})
	plugin := json.RawMessage(`{"name":"slow","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
		"execution":{"method":"GET","base_url":"` + up.URL + `/x"}}`)
	call := func(user int, q string) *http.Response {
		body, _ := json.Marshal(map[string]any{"plugin": plugin, "user_id": user, "arguments": map[string]string{"q": q}})
		req, _ := http.NewRequest("POST", e.url+"/v1/execute", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+serviceToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	done := make(chan *http.Response)
	go func() { done <- call(7, "block") }()
	<-entered
	if resp := call(7, "x"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("user 7's second call: %d, Retry-After %q; want 429 with 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := call(8, "x"); resp.StatusCode != http.StatusOK {
		t.Errorf("user 8 held up: %d", resp.StatusCode)
	}
	close(release)
	if resp := <-done; resp.StatusCode != http.StatusOK {
		t.Errorf("the blocked call: %d", resp.StatusCode)
	}
	if resp := call(7, "x"); resp.StatusCode != http.StatusOK {
		t.Errorf("user 7 after the call ended: %d", resp.StatusCode)
	}

	// Runs: a run waiting on the model holds user 7's run slot.
	llm.Script(openaitest.Turn{Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		body, _ := json.Marshal(map[string]any{"user_id": 7, "messages": []map[string]string{{"role": "user", "content": "hi"}}})
		req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/runs", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+serviceToken)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(llm.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	run := map[string]any{"user_id": 7, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	code, out := e.do("POST", "/v1/runs", serviceToken, run)
	if code != http.StatusTooManyRequests || !strings.Contains(errMessage(out), "runs in flight") {
		t.Errorf("user 7's second run: %d %v", code, out)
	}
	llm.Script(openaitest.Turn{Content: "hello"})
	run["user_id"] = 8
	if code, out := e.do("POST", "/v1/runs", serviceToken, run); code != http.StatusOK {
		t.Errorf("user 8's run: %d %v", code, out)
	}
	cancel()
	<-runDone
}
