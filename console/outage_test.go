package console_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestSignInBlackholed (review 73b): with the database blackholed, a
// valid token this replica has not read yet is neither taken for an
// invalid one at the sign-in (which said "this token is not valid" and
// counted a failed sign-in against the person's address: ten made the
// sign-in wait a minute after the outage) nor held for as long as the
// connection lives: the sign-in says the database is unavailable within
// store.QueryTimeout, and counts no failure.
func TestSignInBlackholed(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	st := testdb.At(t, through)
	e := newEnv(t, st, newMasterKey())
	// Two users' tokens, the first signed in before the outage (its
	// statement prepared), the second not read by this replica.
	var unread string
	for i, user := range []int64{7, 8} {
		tok, _, err := api.IssueToken(context.Background(), st, user, "console", 0, "")
		if err != nil {
			t.Fatal(err)
		}
		if unread = tok; i == 0 {
			if resp := e.signIn(e.client(), tok); resp.Header.Get("Location") != "/console/" {
				t.Fatalf("live sign-in: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
		}
	}

	proxy.Blackhole()
	bound := store.QueryTimeout + 2*time.Second
	done := make(chan *http.Response, 1)
	go func() { done <- e.signIn(e.client(), unread) }()
	select {
	case resp := <-done:
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/console/?error=database_unavailable" {
			t.Errorf("a sign-in on a blackholed database: %d %q, want a redirect to ?error=database_unavailable", resp.StatusCode, loc)
		}
	case <-time.After(bound):
		t.Fatalf("a sign-in not answered within %v: held by the database", bound)
	}

	// Back: nine failed sign-ins of that address are one fewer than those
	// that make it wait, so the person signs in.
	proxy.Refuse()
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	for range 9 {
		e.signIn(e.client(), "bx_not_a_token")
	}
	if resp := e.signIn(e.client(), unread); resp.Header.Get("Location") != "/console/" {
		t.Errorf("a sign-in after the outage: %d %q, want signed in (the outage counted as a failed sign-in)", resp.StatusCode, resp.Header.Get("Location"))
	}
}
