package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestRouteQueriesBlackholed (review 73b): with the database blackholed
// (connections open, nothing answered), a route's own query — the
// tokens', the sources', the execution records', an import's — is
// bounded by store.QueryTimeout like the reads every call shares: the
// route answers 503 database_unavailable within it (a route that writes
// within two: the statement, then the change counters' poll), where it held its caller
// until the answer's deadline (2 minutes) with its statement prepared.
func TestRouteQueriesBlackholed(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	e := newEnv(t, testdb.At(t, through))
	doc := `{"document": {"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://a.example"}],
		"paths": {"/x": {"get": {"operationId": "x", "responses": {"200": {"description": "ok"}}}}}}, "dry_run": true}`
	routes := []struct {
		method, path, body string
		write              bool
	}{
		{"GET", "/v1/tokens", "", false},
		{"GET", "/v1/sources", "", false},
		{"GET", "/v1/executions", "", false},
		{"GET", "/v1/audit", "", false},
		{"POST", "/v1/plugins/import/openapi", doc, true},
		{"POST", "/v1/tokens", `{"user_id": "7", "name": "t"}`, true},
		{"DELETE", "/v1/tokens/99999", "", true},
	}
	writes := map[string]bool{}
	for _, r := range routes {
		writes[r.method+" "+r.path] = r.write
	}
	// Live first: each route's statements are prepared, as on a replica
	// that has served a while.
	for _, r := range routes {
		if code, body := e.do(r.method, r.path, adminToken, r.body); code >= 500 {
			t.Fatalf("live %s %s: %d %v", r.method, r.path, code, body)
		}
	}

	proxy.Blackhole()
	type answer struct {
		route string
		code  int
		body  map[string]any
		took  time.Duration
	}
	// All at once: none waits behind another's statement either.
	done := make(chan answer, len(routes))
	for _, r := range routes {
		go func() {
			began := time.Now()
			code, body := api.DoJSON(t, e.url, r.method, r.path, adminToken, r.body)
			done <- answer{r.method + " " + r.path, code, body, time.Since(began)}
		}()
	}
	bound := 2*store.QueryTimeout + 2*time.Second
	timeout := time.After(bound)
	for range routes {
		select {
		case a := <-done:
			if a.code != http.StatusServiceUnavailable || errCodeOf(a.body) != "database_unavailable" {
				t.Errorf("%s on a blackholed database: %d %v after %v, want 503 database_unavailable", a.route, a.code, a.body, a.took)
			}
			if !writes[a.route] && a.took > store.QueryTimeout+2*time.Second {
				t.Errorf("%s on a blackholed database: answered after %v, want within one bound", a.route, a.took)
			}
		case <-timeout:
			t.Fatalf("a route not answered within %v: held by the database", bound)
		}
	}
}
