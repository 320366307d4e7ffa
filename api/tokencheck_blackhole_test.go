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
	ctx := context.Background()
	read, _, err := api.IssueToken(ctx, st, 7, "read", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	unread, _, err := api.IssueToken(ctx, st, 8, "unread", 0, "")
	if err != nil {
		t.Fatal(err)
	}
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
