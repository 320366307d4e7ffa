package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// TestRequestState: a sealed state opens only under its key, unaltered;
// it is refused to another token, user or endpoint, for another tool or
// arguments, once expired, and the second time it is used.
func TestRequestState(t *testing.T) {
	key, err := StateKey("master")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := StateKey("another master")
	st := testdb.Open(t, store.DialectSQLite)
	svc := &Service{opts: Options{RoundTrips: &RoundTrips{Key: key, Claims: st}}}
	e := &entry{plugin: &plugins.Plugin{Name: "delete_repo"}}
	args := json.RawMessage(`{"repo":"a","n":1}`)
	ss := &session{svc: svc, sessionOptions: sessionOptions{user: 7, principal: "tok7", endpoint: "/mcp"}}
	seal := func(ttl time.Duration) string {
		svc.opts.RoundTrips.TTL = ttl
		s, err := ss.stateFor(e, args, nil, "p1", modeForm)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	state := seal(time.Minute)
	if _, err := (&RoundTrips{Key: other}).open(state); err != errState {
		t.Errorf("opened under another key: %v", err)
	}
	b := []byte(state)
	b[10] ^= 1
	if _, err := svc.opts.RoundTrips.open(string(b)); err != errState {
		t.Errorf("opened altered: %v", err)
	}
	for _, tc := range []struct {
		name string
		ss   sessionOptions
		tool string
		args string
		want string
	}{
		{"another token", sessionOptions{user: 7, principal: "tok7b", endpoint: "/mcp"}, "delete_repo", `{"repo":"a","n":1}`, "not a state"},
		{"another user", sessionOptions{user: 8, principal: "tok7", endpoint: "/mcp"}, "delete_repo", `{"repo":"a","n":1}`, "not a state"},
		{"another endpoint", sessionOptions{user: 7, principal: "tok7", endpoint: "/mcp/agents/ops"}, "delete_repo", `{"repo":"a","n":1}`, "not a state"},
		{"another tool", ss.sessionOptions, "delete_all", `{"repo":"a","n":1}`, "differs"},
		{"other arguments", ss.sessionOptions, "delete_repo", `{"repo":"b","n":1}`, "differs"},
	} {
		o := &session{svc: svc, sessionOptions: tc.ss}
		_, err := o.claim(t.Context(), &entry{plugin: &plugins.Plugin{Name: tc.tool}}, json.RawMessage(tc.args), &retry{state: state})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// The same arguments in another order are the same call.
	if _, err := ss.claim(t.Context(), e, json.RawMessage(`{"n":1, "repo":"a"}`), &retry{state: state}); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if _, err := ss.claim(t.Context(), e, args, &retry{state: state}); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Errorf("used twice: %v", err)
	}
	late := seal(time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if _, err := ss.claim(t.Context(), e, args, &retry{state: late}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: %v", err)
	}
}

// TestRequestStateClaimBlackholed: with the database blackholed
// (connections open, nothing answered), a retry whose state cannot be
// claimed is refused within store.QueryTimeout, failing closed with the
// clear error, however many retries wait on it at once. Before, the claim
// waited on the call's context, with no deadline: as long as the
// connection lived.
func TestRequestStateClaimBlackholed(t *testing.T) {
	key, err := StateKey("master")
	if err != nil {
		t.Fatal(err)
	}
	_, proxy, through := testdb.Blackholable(t)
	svc := &Service{opts: Options{RoundTrips: &RoundTrips{Key: key, Claims: testdb.At(t, through), TTL: time.Minute}}, log: slog.Default()}
	e := &entry{plugin: &plugins.Plugin{Name: "delete_repo"}}
	args := json.RawMessage(`{"repo":"a"}`)
	proxy.Blackhole()
	// The test's own bound: the code under test's must come well before.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	bound := store.QueryTimeout + 2*time.Second
	done := make(chan error, 2)
	for _, user := range []int64{7, 8} {
		ss := &session{svc: svc, sessionOptions: sessionOptions{user: user, principal: "tok", endpoint: "/mcp"}}
		state, err := ss.stateFor(e, args, nil, "p1", modeForm)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, err := ss.claim(ctx, e, args, &retry{state: state}); done <- err }()
	}
	timeout := time.After(bound)
	for range 2 {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "cannot be checked at the moment; nothing was sent") {
				t.Errorf("a claim on a blackholed database: %v, want it refused as unchecked", err)
			}
		case <-timeout:
			t.Fatalf("a claim not decided within %v: held by the database", bound)
		}
	}
}
