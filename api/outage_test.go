package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
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
	within := newEnv(t, st, func(s *api.Server) { s.Changes, s.OutageGrace = changes, time.Hour })
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
