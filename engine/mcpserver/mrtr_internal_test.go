package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

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

// FuzzOpenState: a requestState a client sends back, whatever it holds,
// opens only when this key sealed it: anything else is errState, the one
// refusal that tells nothing of what was wrong (never a decoder's error
// quoting the client's text); a sealed state opens to what was sealed,
// and the same state with any byte changed does not open.
func FuzzOpenState(f *testing.F) {
	key, err := StateKey("master")
	if err != nil {
		f.Fatal(err)
	}
	rt := &RoundTrips{Key: key}
	sealed, err := rt.seal(&requestState{Version: 1, Principal: "tok", User: 7, Endpoint: "/mcp", Tool: "delete_repo", Args: argsDigest(nil), Mode: modeForm, Expires: 1, Nonce: "n"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed, "tok", int64(7), "delete_repo", uint16(3))
	f.Add("", "", int64(0), "", uint16(0))
	f.Add("AAAA", "p", int64(-1), "t", uint16(1))
	f.Add(sealed[:len(sealed)-1]+"=", "p", int64(1), "t", uint16(40))
	f.Add(strings.Repeat("A", 40), "p", int64(1), "t", uint16(40))
	// A state sealed by this key of JSON that is not a state (another v,
	// another shape) is refused as well.
	notState, _ := rt.sealBytes([]byte(`{"v":2,"t":"x"}`), stateAAD)
	f.Add(notState, "p", int64(1), "t", uint16(2))
	f.Fuzz(func(t *testing.T, s, principal string, user int64, tool string, flip uint16) {
		if st, err := rt.open(s); err != nil && err != errState {
			t.Fatalf("open(%q): %v, want errState", s, err)
		} else if err == nil && (st == nil || st.Version != 1) {
			t.Fatalf("open(%q) = %+v", s, st)
		}
		want := &requestState{Version: 1, Principal: principal, User: user, Endpoint: "/mcp", Tool: tool, Args: argsDigest([]byte(s)), Mode: modeURL, Expires: user, Nonce: s}
		state, err := rt.seal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rt.open(state)
		if err != nil {
			t.Fatalf("a state this key sealed: %v", err)
		}
		// Strings that are not UTF-8 are sealed as encoding/json writes them.
		if utf8.ValidString(principal) && utf8.ValidString(tool) && utf8.ValidString(s) && *got != *want {
			t.Fatalf("opened %+v, sealed %+v", got, want)
		}
		b := []byte(state)
		i := int(flip) % len(b)
		b[i] = "AB"[b[i]&1^1] // another character of the alphabet
		if b[i] == state[i] {
			b[i] = 'C'
		}
		// The last character may hold bits the decoding drops: a change
		// there alone can read as the same bytes.
		if i == len(b)-1 {
			return
		}
		if _, err := rt.open(string(b)); err != errState {
			t.Fatalf("%q, changed at %d, opened: %v", state, i, err)
		}
	})
}

// FuzzApproved: a retry's inputResponses, whatever they hold, approve
// only an accepted form whose decision is "approve"; declined and
// cancelled forms deny, and an answer that cannot be read is asked again.
func FuzzApproved(f *testing.F) {
	for _, s := range []string{
		`{"decision":{"action":"accept","content":{"decision":"approve"}}}`,
		`{"decision":{"action":"accept","content":{"decision":"deny","reason":"no"}}}`,
		`{"decision":{"action":"decline"}}`,
		`{"decision":{"action":"accept","content":{"decision":["approve"]}}}`,
		`{"approval":{"action":"accept"}}`,
		`{"decision":{"action":"accept","content":{"decision":"approve","decision":"deny"}}}`,
		`{"decision":{"roots":[]}}`,
		`{"decision":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var responses sdk.InputResponseMap
		if json.Unmarshal(raw, &responses) != nil {
			return
		}
		approve, answered := approved(responses)
		// What the person answered, read independently of the SDK's types.
		var plain map[string]struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		json.Unmarshal(raw, &plain)
		d := plain[inputDecision]
		decision, _ := d.Content["decision"].(string)
		if approve && (!answered || d.Action != "accept" || decision != "approve") {
			t.Fatalf("%s approved: action %q, decision %q", raw, d.Action, decision)
		}
		if answered && !approve && d.Action == "accept" && decision != "deny" {
			t.Fatalf("%s denied: action %q, decision %q", raw, d.Action, decision)
		}
	})
}
