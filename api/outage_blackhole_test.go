package api_test

import (
	"context"
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
// within two: the statement, then the change counters' poll), where it
// held its caller until the answer's deadline (2 minutes) with its
// statement prepared.
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
		{"PUT", "/v1/credentials/7/BOUND_KEY", `{"value": "a-credential-of-some-length"}`, true}, // a transaction
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

// TestTokenCheckBlackholed (review 73b): with the database blackholed
// (connections open, nothing answered), a request whose token this
// replica has not read yet is answered within store.QueryTimeout, 503
// database_unavailable with Retry-After: not held for as long as the
// connection lives, nor 401 unauthorized, which tells a client (and the
// console's sign-in) that its token is not valid. A token read before
// the outage is served from the cache.
func TestTokenCheckBlackholed(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	st := testdb.At(t, through)
	e := newEnv(t, st)
	var tokens [2]string // one read before the outage, one not
	for i := range tokens {
		tok, _, err := api.IssueToken(context.Background(), st, int64(7+i), "t", 0, "")
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = tok
	}
	read, unread := tokens[0], tokens[1]
	// Read once live: the token cached, the statement prepared.
	if code, body := e.do("GET", "/v1/tools", read, nil); code != http.StatusOK {
		t.Fatalf("live: %d %v", code, body)
	}

	proxy.Blackhole()
	bound := store.QueryTimeout + 2*time.Second
	type answer struct {
		code   int
		header http.Header
		body   map[string]any
		took   time.Duration
	}
	done := make(chan answer, 1)
	go func() {
		began := time.Now()
		code, header, body := api.DoJSONHeader(t, e.url, "GET", "/v1/tools", unread, nil)
		done <- answer{code, header, body, time.Since(began)}
	}()
	select {
	case a := <-done:
		if a.code != http.StatusServiceUnavailable || errCodeOf(a.body) != "database_unavailable" || a.header.Get("Retry-After") == "" {
			t.Errorf("an unread token on a blackholed database: %d %v after %v, want 503 database_unavailable with Retry-After", a.code, a.body, a.took)
		}
	case <-time.After(bound):
		t.Fatalf("an unread token's request not answered within %v: held by the database", bound)
	}
	if code, body := e.do("GET", "/v1/tools", read, nil); code != http.StatusOK {
		t.Errorf("a token read before the outage: %d %v, want it served from the cache", code, body)
	}
}

// TestCommitCutOutcomeUnknown (leftovers78): a COMMIT the database
// received and committed, its answer lost (the partition begins right
// after it), was answered 503 database_unavailable with Retry-After,
// "this request was not completed; retry later": a client retrying a
// create would write it twice. It is answered 503 commit_outcome_unknown,
// without Retry-After, saying the write may have been done; the database
// holds it (here, it was).
func TestCommitCutOutcomeUnknown(t *testing.T) {
	direct, proxy, through := testdb.Blackholable(t)
	e := newEnv(t, testdb.At(t, through))
	if code, body := e.do("PUT", "/v1/credentials/7/LIVE_KEY", adminToken, map[string]any{"value": "a-credential-of-some-length"}); code != http.StatusNoContent {
		t.Fatalf("live: %d %v", code, body) // a transaction's statements prepared
	}
	proxy.BlackholeAfter([]byte("COMMIT"))
	began := time.Now()
	code, header, body := api.DoJSONHeader(t, e.url, "PUT", "/v1/credentials/7/CUT_KEY", adminToken, map[string]any{"value": "another-credential-of-some-length"})
	if code != http.StatusServiceUnavailable || errCodeOf(body) != "commit_outcome_unknown" || header.Get("Retry-After") != "" {
		t.Errorf("a COMMIT cut: %d %v (Retry-After %q) after %v, want 503 commit_outcome_unknown without Retry-After", code, body, header.Get("Retry-After"), time.Since(began))
	}
	if took, bound := time.Since(began), 2*store.QueryTimeout+2*time.Second; took > bound {
		t.Errorf("a COMMIT cut: answered after %v, want within %v", took, bound)
	}
	got, err := direct.GetCredentials(t.Context(), 7, []string{"CUT_KEY"})
	if err != nil || len(got) != 1 {
		t.Errorf("the write whose COMMIT was cut: %v (%v), want it done", got, err)
	}
}
