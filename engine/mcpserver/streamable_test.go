package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcpserver"
)

// request sends one request to e's handler as user (0: no token) in
// session sid, the default headers of a client of 2025-06-18 changed by
// hdr ("" deletes one; Host sets the request's): the response, its body
// read.
func (e *sessionsEnv) request(ctx context.Context, method string, user int, sid, body string, hdr map[string]string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, e.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if user != 0 {
		req.Header.Set("Authorization", fmt.Sprintf("Bearer user-%d", user))
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestStreamableHTTP: what /mcp answers each kind of request, as the
// specification's streamable HTTP transport (2025-06-18) asks and the
// SDK's handler answered.
func TestStreamableHTTP(t *testing.T) {
	e := newSessionsEnv(t, mcpserver.SessionLimits{}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
	sid := e.open(7)
	const ping = `{"jsonrpc":"2.0","id":"p","method":"ping"}`
	for _, tc := range []struct {
		name, method string
		user         int
		sid, body    string
		hdr          map[string]string
		status       int
		want         string // in the body
	}{
		{"a request", "POST", 7, sid, ping, nil, 200, `{"jsonrpc":"2.0","id":"p","result":{}}`},
		{"a call", "POST", 7, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`, nil, 200, `"id":3,"result":{"content":[{"type":"text","text":"{\"ok\":true}"}]`},
		{"an error", "POST", 7, sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}`, nil, 200, `"id":4,"error":{"code":-32602,"message":"unknown tool \"nope\""}`},
		{"a notification", "POST", 7, sid, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, nil, 202, ""},
		{"a response of the client", "POST", 7, sid, `{"jsonrpc":"2.0","id":99,"result":{}}`, nil, 202, ""},
		{"an error of the client to nothing asked", "POST", 7, sid, `{"jsonrpc":"2.0","id":"e","error":{"code":1,"message":"x"}}`, nil, 202, ""},
		{"a string id that reads as a number", "POST", 7, sid, `{"jsonrpc":"2.0","id":"1","method":"ping"}`, nil, 200, `{"jsonrpc":"2.0","id":"1","result":{}}`},
		{"initialize again", "POST", 7, sid, initialize, nil, 200, `"id":1,"error":{"code":0,"message":"duplicate \"initialize\" received"}`},
		{"initialize as a notification", "POST", 7, "", `{"jsonrpc":"2.0","method":"initialize","params":{}}`, nil, 400, "no session"},
		{"a batch", "POST", 7, sid, "[" + ping + "]", nil, 400, `"message":"JSON-RPC batches are not supported`},
		{"not JSON", "POST", 7, sid, `{"jsonrpc":`, nil, 400, `"code":-32700`},
		{"an empty body", "POST", 7, sid, ``, nil, 400, "non-empty body"},
		{"too large", "POST", 7, sid, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("x", 8<<20) + `"}}`, nil, 413, "exceeds"},
		{"no session", "POST", 7, "", ping, nil, 400, `{"error":{"code":-32600,"message":"no session: send initialize`},
		{"an unknown session", "POST", 7, "nope", ping, nil, 404, "session not found"},
		{"another identity", "POST", 8, sid, ping, nil, 403, "mismatch"},
		{"no token", "POST", 0, sid, ping, nil, 401, "unauthorized"},
		{"not JSON by its type", "POST", 7, sid, ping, map[string]string{"Content-Type": "text/plain"}, 415, "application/json"},
		{"Accept without event streams", "POST", 7, sid, ping, map[string]string{"Accept": "application/json"}, 400, "Accept"},
		{"Accept of anything", "POST", 7, sid, ping, map[string]string{"Accept": "*/*"}, 200, `"result":{}`},
		{"an unsupported protocol version", "POST", 7, sid, ping, map[string]string{"Mcp-Protocol-Version": "2024-01-01"}, 400, "Unsupported protocol version"},
		{"a stateless protocol version, _meta missing", "POST", 7, "", ping, map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, 400, `"code":-32602,"message":"missing or invalid _meta field`},
		{"a protocol version to come", "POST", 7, "", ping, map[string]string{"Mcp-Protocol-Version": "2027-01-01"}, 400, `"code":-32022`},
		{"another Host on loopback", "POST", 7, sid, ping, map[string]string{"Host": "evil.example"}, 403, "invalid Host"},
		{"GET without a session", "GET", 7, "", "", nil, 400, "requires an Mcp-Session-Id"},
		{"GET without event streams", "GET", 7, sid, "", map[string]string{"Accept": "application/json"}, 400, "text/event-stream"},
		{"DELETE of another identity", "DELETE", 8, sid, "", nil, 403, "mismatch"},
		{"GET of another identity", "GET", 8, sid, "", map[string]string{"Accept": "text/event-stream"}, 403, "mismatch"},
		{"PUT", "PUT", 7, sid, ping, nil, 405, "Method Not Allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.request(t.Context(), tc.method, tc.user, tc.sid, tc.body, tc.hdr)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s\nwant %d with %s", resp.StatusCode, body, tc.status, tc.want)
			}
			if tc.status == 200 && resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			}
		})
	}
	if resp, _ := e.request(t.Context(), "DELETE", 7, sid, "", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if resp, _ := e.request(t.Context(), "POST", 7, sid, ping, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a request after DELETE: %d, want 404", resp.StatusCode)
	}
}

// TestStreamableStream: a session's GET stream is an event stream, one
// at a time, that ends with the session.
func TestStreamableStream(t *testing.T) {
	e := newSessionsEnv(t, mcpserver.SessionLimits{}, func(http.ResponseWriter, *http.Request) {})
	sid := e.open(7)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", e.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer user-7")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || line != ": ok\n" {
		t.Fatalf("the stream began with %q, %v", line, err)
	}
	if second, _ := e.request(t.Context(), "GET", 7, sid, "", map[string]string{"Accept": "text/event-stream"}); second.StatusCode != http.StatusConflict {
		t.Errorf("a second GET stream: %d, want 409", second.StatusCode)
	}
	if resp, _ := e.request(t.Context(), "DELETE", 7, sid, "", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if rest, err := io.ReadAll(r); err != nil || strings.TrimSpace(string(rest)) != "" {
		t.Fatalf("the stream after DELETE: %q, %v", rest, err)
	}
}

// TestListenNotInSession (mcp78): subscriptions/listen is a request of
// the stateless era; a session's client hears of changes on its GET
// stream. Served in a session, each listen was held open for as long as
// its client liked, with a goroutine watching the catalog every second,
// and nothing bounded how many one session held (the bound on requests in
// flight is the stateless era's): a hundred of them were held. Now it is
// answered at once, method not found, as in any session of a version
// before 2026-07-28.
func TestListenNotInSession(t *testing.T) {
	e := newSessionsEnv(t, mcpserver.SessionLimits{}, func(http.ResponseWriter, *http.Request) {})
	sid := e.open(7)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", e.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer user-7")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	listen, body := e.request(ctx, "POST", 7, sid, `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`, nil)
	if listen.StatusCode != http.StatusOK || !strings.Contains(body, `"id":5,"error":{"code":-32601`) {
		t.Errorf("subscriptions/listen in a session: %d %s, want method not found at once", listen.StatusCode, body)
	}
}

// TestStreamableCancel: a call is cancelled — its upstream request with
// it — when the client sends notifications/cancelled, and when the client
// goes away before the answer.
func TestStreamableCancel(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	e := newSessionsEnv(t, mcpserver.SessionLimits{}, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
		cancelled <- struct{}{}
	})
	sid := e.open(7)
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}`

	// By notifications/cancelled: the POST of the call is then answered
	// or dropped by the client; it goes away here.
	ctx, stop := context.WithCancel(t.Context())
	go e.requestQuiet(ctx, sid, call)
	<-started
	if resp, _ := e.request(t.Context(), "POST", 7, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d", resp.StatusCode)
	}
	<-cancelled
	stop()

	// By going away.
	ctx, stop = context.WithCancel(t.Context())
	defer stop()
	go e.requestQuiet(ctx, sid, strings.Replace(call, `"id":5`, `"id":6`, 1))
	<-started
	stop()
	<-cancelled
	// The session goes on.
	if !e.alive(7, sid) {
		t.Fatal("the session ended")
	}
}

// heldGate holds each call in Hold (which it reports on entered) until
// release is closed, whether or not its context ends (which it reports
// on cancelled): a call that takes a while to notice its client went
// away.
type heldGate struct{ entered, cancelled, release chan struct{} }

// Policy holds every call, so that each reaches Hold.
func (heldGate) Policy() confirm.Policy { return confirm.Always }

func (g heldGate) Hold(ctx context.Context, _ *engine.Call, plan *engine.Plan) *mcpserver.Waiting {
	g.entered <- struct{}{}
	context.AfterFunc(ctx, func() { g.cancelled <- struct{}{} })
	<-g.release
	plan.Approve("test", "held")
	return nil
}

func (heldGate) Decide(context.Context, *engine.Call, *engine.Plan, string, bool) bool { return false }

// TestStreamableIDReuse: a request id stays taken until the server has
// answered it, even when its client went away: a new request reusing it
// is refused, never given the earlier call's answer.
func TestStreamableIDReuse(t *testing.T) {
	g := heldGate{make(chan struct{}, 3), make(chan struct{}, 3), make(chan struct{})}
	e := newSessionsEnvOptions(t, mcpserver.Options{Gate: g}, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"q":"`+r.URL.Query().Get("q")+`"}`)
	})
	sid := e.open(7)
	call := func(q string) string {
		return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{"q":"` + q + `"}}}`
	}
	ctx, stop := context.WithCancel(t.Context())
	go e.requestQuiet(ctx, sid, call("first"))
	<-g.entered
	stop()
	<-g.cancelled // the transport has seen the client go

	type answer struct {
		status int
		body   string
	}
	second := make(chan answer, 1)
	go func() {
		resp, body := e.request(t.Context(), "POST", 7, sid, call("second"), nil)
		second <- answer{resp.StatusCode, body}
	}()
	select {
	case a := <-second:
		if a.status != http.StatusBadRequest || !strings.Contains(a.body, "duplicate in-flight request ID 5") {
			t.Fatalf("the id reused while its call runs: %d %s", a.status, a.body)
		}
		close(g.release)
	case <-time.After(5 * time.Second): // the failure's path only: the second POST waits for the first call
		close(g.release)
		a := <-second
		t.Fatalf("the id reused while its call runs was answered %d %s", a.status, a.body)
	}
	// Once the first call has answered, its id is free again.
	for {
		resp, body := e.request(t.Context(), "POST", 7, sid, call("third"), nil)
		if resp.StatusCode == http.StatusOK {
			if !strings.Contains(body, `\"q\":\"third\"`) {
				t.Fatalf("the third call: %s", body)
			}
			break
		}
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("the third call: %d %s", resp.StatusCode, body)
		}
	}
}

// requestQuiet POSTs body in session sid of user 7 until ctx ends, its
// answer dropped.
func (e *sessionsEnv) requestQuiet(ctx context.Context, sid, body string) {
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer user-7")
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// FuzzStreamablePOST: whatever a client POSTs in a session is answered
// (a JSON-RPC response to a request, 202 to anything else, 400 or 413 to
// what is not taken), and the session goes on.
func FuzzStreamablePOST(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"slow","arguments":{"q":"x"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1e3,"method":"nope"}`,
	} {
		f.Add(s)
	}
	e := newSessionsEnv(f, mcpserver.SessionLimits{}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	var sid string
	f.Fuzz(func(t *testing.T, body string) {
		e.t = t
		if sid == "" {
			sid = e.open(7)
		}
		resp, got := e.request(t.Context(), "POST", 7, sid, body, nil)
		switch resp.StatusCode {
		case http.StatusOK:
			if !json.Valid([]byte(got)) || !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":`) {
				t.Fatalf("%q answered %s", body, got)
			}
		case http.StatusAccepted, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("%q answered %d %s", body, resp.StatusCode, got)
		}
		if !e.alive(7, sid) {
			t.Fatalf("the session ended after %q", body)
		}
	})
}

func (heldGate) Close(context.Context, string, string) {}
