package connections_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/connections/oauthtest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestDatabaseDownDuringCall: with the database gone, a call using a
// connection fails with a clear error, sends nothing and shows no token.
func TestDatabaseDownDuringCall(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider()
	e.addPlugin("acme_me", "read")
	e.connect(7, "alice")
	access, refresh := e.tokens(7)
	outputOf(t, e.call("acme_me", 7))
	hits := e.apiHits.Load()
	if err := e.st.DB().Close(); err != nil {
		t.Fatal(err)
	}
	code, out := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "acme_me", "arguments": map[string]any{}, "user_id": 7})
	t.Logf("%d %v", code, out)
	if out["ok"] == true {
		t.Fatalf("succeeded without the database: %v", out)
	}
	if n := e.apiHits.Load(); n != hits {
		t.Fatalf("the API got %d requests", n-hits)
	}
	b, _ := json.Marshal(out)
	for _, s := range []string{access, refresh} {
		if strings.Contains(string(b), s) || strings.Contains(e.logs.String(), s) {
			t.Fatal("a token shows")
		}
	}
}

// TestDatabaseDownDuringFlow: a start URL or callback reached while the
// database is gone says so on its page; the log says what failed without
// the handle, state or code.
func TestDatabaseDownDuringFlow(t *testing.T) {
	for _, step := range []string{"start", "callback"} {
		t.Run(step, func(t *testing.T) {
			e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
			e.registerProvider()
			start := e.authorize(7, "")
			b := e.browser("a")
			target, secrets := start, []string{start[strings.LastIndex(start, "/")+1:]}
			if step == "callback" {
				u := e.stopAtProvider(b, start)
				target, secrets = u.String(), []string{u.Query().Get("state"), u.Query().Get("code")}
			}
			if err := e.st.DB().Close(); err != nil {
				t.Fatal(err)
			}
			if code, page, _ := b.get(target); code != http.StatusServiceUnavailable {
				t.Fatalf("%d\n%s", code, page)
			}
			logs := e.logs.String()
			if !strings.Contains(logs, "oauth flow") {
				t.Fatalf("the failure is not logged:\n%s", logs)
			}
			for _, s := range secrets {
				if s == "" || strings.Contains(logs, s) {
					t.Fatalf("the log holds %q:\n%s", s, logs)
				}
			}
		})
	}
}

// TestRefreshBlackholed: with the database blackholed (connections open,
// nothing answered), a call needing a connection's token is decided
// within store.QueryTimeout, failing closed with an error and nothing
// sent to the provider or the API: whether the database stops before the
// connection is read, between the read and the refresh's claim (callers
// sharing the one flight), or after the claim, while the provider's
// answer is lost (the connection must then be marked broken, a write the
// database does not take).
func TestRefreshBlackholed(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	e := newEnv(t, testdb.At(t, through), envOptions{})
	e.registerProvider()
	e.addPlugin("acme_me", "read")
	e.connect(7, "alice")
	e.connect(8, "bob")
	svc := e.replicas[0].svc
	origin := e.api.URL
	// The test's own bound: the code under test's must come well before.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	bound := store.QueryTimeout + 2*time.Second
	within := func(name string, n int, want string, fn func() error) {
		t.Helper()
		done := make(chan error, n)
		for range n {
			go func() { done <- fn() }()
		}
		timeout := time.After(bound)
		for range n {
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s on a blackholed database: %v, want an error saying %q", name, err, want)
				}
			case <-timeout:
				t.Fatalf("%s not decided within %v: held by the database", name, bound)
			}
		}
	}
	var refreshes int64 // those the live steps made
	sentNothing := func(name string) {
		t.Helper()
		if n := e.as.Refreshes.Load() - refreshes; n != 0 {
			t.Errorf("%s: %d refreshes reached the provider", name, n)
		}
		if n := e.apiHits.Load(); n != 0 {
			t.Errorf("%s: %d requests reached the API", name, n)
		}
	}
	// Live, the token is served, refreshed, and a connection whose
	// refresh's answer is lost broken: what the engine read then (the
	// catalog's origins) it keeps, and each statement is prepared (a
	// first preparation has a bound of its own, TestBlackholedPrepareBounded).
	if _, err := svc.Token(ctx, 7, "acme", []string{"read"}, origin); err != nil {
		t.Fatal(err)
	}
	e.expire()
	if _, err := svc.Token(ctx, 7, "acme", []string{"read"}, origin); err != nil {
		t.Fatal(err)
	}
	e.as.DropRefreshAnswers(1)
	if _, err := svc.Token(ctx, 8, "acme", []string{"read"}, origin); err == nil || !strings.Contains(err.Error(), "a refresh's answer was lost") {
		t.Fatalf("a live refresh whose answer is lost: %v", err)
	}
	refreshes = e.as.Refreshes.Load()
	e.expire()
	row, err := e.st.GetOAuthConnection(t.Context(), 7, "acme")
	if err != nil {
		t.Fatal(err)
	}

	proxy.Blackhole()
	within("a call's token", 2, "cannot be read or written at the moment", func() error {
		_, err := svc.Token(ctx, 7, "acme", []string{"read"}, origin)
		return err
	})
	sentNothing("a call's token")
	within("a refresh's claim", 2, "cannot be read or written at the moment", func() error {
		_, err := connections.Refresh(svc, ctx, row)
		return err
	})
	sentNothing("a refresh's claim")

	// After the claim: the provider's answer is lost as the database
	// stops answering.
	proxy.Refuse() // the connections that lost bytes closed, as when TCP gives up
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	lost := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		proxy.Blackhole()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(lost.Close)
	if code, body := e.do("POST", "/v1/oauth/providers", adminToken, map[string]any{"name": "acme", "authorization_url": e.as.URL + "/authorize",
		"token_url": lost.URL + "/token", "scopes": []string{"openid", "read"}, "client_id": oauthtest.ClientID}); code != http.StatusOK {
		t.Fatalf("register provider: %d %v", code, body)
	}
	within("a refresh whose answer is lost", 1, "a refresh's answer was lost", func() error {
		_, err := svc.Token(ctx, 7, "acme", []string{"read"}, origin)
		return err
	})
	sentNothing("a refresh whose answer is lost")
	if n := asked.Load(); n != 1 {
		t.Errorf("%d refreshes reached the provider whose answer is lost, want 1", n)
	}
}
