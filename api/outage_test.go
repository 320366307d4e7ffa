package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// Issue 15, point 1: while the database is unreachable the engine serves
// what it read last for the outage grace, and says so on /readyz; past
// the grace it fails closed, saying why (metrics stay up).
func TestOutageGrace(t *testing.T) {
	ctx := context.Background()
	st := testdb.Open(t, store.DialectSQLite) // closed mid-test: the outage
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	changes := store.NewWatcher(st, time.Hour, nil)
	if _, err := changes.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	// Records through a spool, as serve writes them: straight to the
	// database, the first call's record failing after the outage would
	// refuse the next call (records_unavailable), depending on timing.
	within := newEnv(t, st, func(s *api.Server) {
		s.Changes, s.OutageGrace, s.Executor.Recorder = changes, time.Hour, spooledRecorder(t, st)
	})
	past := newEnv(t, st, func(s *api.Server) { s.Changes, s.OutageGrace = changes, time.Nanosecond })
	plugin := `{"name":"lookup","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"` + up.URL + `"}}`
	if code, body := within.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		t.Fatalf("add plugin: %d %v", code, body)
	}
	call := map[string]any{"name": "lookup", "arguments": map[string]any{}}
	if code, body := within.do("POST", "/v1/execute", serviceToken, call); code != http.StatusOK {
		t.Fatalf("execute with the database up: %d %v", code, body)
	}

	st.Close() // the database goes away
	if _, err := changes.Poll(ctx); err == nil {
		t.Fatal("the counters were read from a closed database")
	}
	if code, body := within.do("POST", "/v1/execute", serviceToken, call); code != http.StatusOK {
		t.Errorf("execute within the grace: %d %v, want 200 from the snapshot", code, body)
	}
	if code, body := within.do("GET", "/readyz", "", nil); code != http.StatusOK || body["status"] != "degraded" {
		t.Errorf("readyz within the grace: %d %v, want 200 degraded", code, body)
	}

	for range 2 {
		code, body := past.do("POST", "/v1/execute", serviceToken, call)
		msg, _ := body["error"].(map[string]any)["message"].(string)
		if code != http.StatusServiceUnavailable || !strings.Contains(msg, "cannot be revalidated") {
			t.Errorf("execute past the grace: %d %v, want 503 saying why", code, body)
		}
	}
	if code, body := past.do("GET", "/readyz", "", nil); code != http.StatusServiceUnavailable {
		t.Errorf("readyz past the grace: %d %v, want 503", code, body)
	}
	if code, _ := past.do("GET", "/metrics", adminToken, nil); code != http.StatusOK {
		t.Errorf("metrics past the grace: %d, want 200", code)
	}
	if n := strings.Count(past.logs.String(), "failing closed"); n != 1 {
		t.Errorf("failing closed logged %d times, want once:\n%s", n, past.logs.String())
	}
}

// TestRunPastOutageGrace: a run begun within the outage grace makes no
// tool call past it: the executor refuses it (database_unavailable,
// nothing sent), as the routes answer 503 — before, the grace was checked
// only when the run's request arrived, so a run went on calling for as
// long as it lasted.
func TestRunPastOutageGrace(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	changes := store.NewWatcher(st, time.Hour, nil) // read once: the outage begins now
	if _, err := changes.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	const grace = time.Second
	var calls atomic.Int64
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		time.Sleep(grace + 200*time.Millisecond) // the run outlives the grace
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	llm := openaitest.New(t)
	e := newEnv(t, st, withModel(llm), func(s *api.Server) {
		s.Changes, s.OutageGrace = changes, grace
		s.Executor.Fresh = func() error { return changes.Stale(grace) }
		s.Runner.LLMTimeout = 5 * time.Second
	})
	plugin := `{"name":"lookup","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"` + up.URL + `"}}`
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		t.Fatalf("add plugin: %d %v", code, body)
	}
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "lookup", Arguments: `{}`}}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "lookup", Arguments: `{}`}}},
		openaitest.Turn{Content: "done"},
	)
	code, reply := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": 7, "plugin_names": []string{"lookup"},
		"messages": []map[string]any{{"role": "user", "content": "look twice"}}})
	if code != http.StatusOK {
		t.Fatalf("run: %d %v", code, reply)
	}
	steps, _ := reply["steps"].([]any)
	if len(steps) != 2 || calls.Load() != 1 {
		t.Fatalf("steps %v, %d sent; want two, the first sent", steps, calls.Load())
	}
	if b, _ := json.Marshal(steps[1]); !strings.Contains(string(b), "database_unavailable") {
		t.Errorf("the tool call past the grace: %s, want database_unavailable", b)
	}
}
