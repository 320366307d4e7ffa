package mcpserver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcpserver"
)

// sessionsEnv is a Handler whose token "user-N" acts for user N, with the
// Service's metrics in reg.
type sessionsEnv struct {
	t   testing.TB
	url string
	reg *prometheus.Registry
}

func newSessionsEnv(t testing.TB, limits mcpserver.SessionLimits, upstream http.HandlerFunc) *sessionsEnv {
	return newSessionsEnvOptions(t, mcpserver.Options{Sessions: limits}, upstream)
}

// newSessionsEnvOptions is newSessionsEnv with the Service's options.
func newSessionsEnvOptions(t testing.TB, opts mcpserver.Options, upstream http.HandlerFunc) *sessionsEnv {
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	cat := &liveCatalog{ps: echoTools(up.URL, "slow"), version: 1}
	svc := mcpserver.NewService(cat, engine.NewExecutor(egresstest.Client(t)), opts)
	reg := prometheus.NewRegistry()
	if err := svc.Register(reg); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler(func(r *http.Request) (mcpserver.Identity, error) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var user int64
		if _, err := fmt.Sscanf(tok, "user-%d", &user); err != nil {
			return mcpserver.Identity{}, errors.New("unknown token")
		}
		return mcpserver.Identity{User: user, Principal: tok}, nil
	}))
	t.Cleanup(srv.Close)
	return &sessionsEnv{t: t, url: srv.URL, reg: reg}
}

// post sends one JSON-RPC message as user, in session sid ("" opens one):
// the status, the session id answered and the body.
func (e *sessionsEnv) post(user int, sid, body string) (int, string, string) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", fmt.Sprintf("Bearer user-%d", user))
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// open opens a session of user and sends notifications/initialized.
func (e *sessionsEnv) open(user int) string {
	e.t.Helper()
	code, sid, body := e.post(user, "", initialize)
	if code != http.StatusOK || sid == "" {
		e.t.Fatalf("initialize of user %d: %d %s", user, code, body)
	}
	e.post(user, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// alive reports whether session sid answers a ping.
func (e *sessionsEnv) alive(user int, sid string) bool {
	e.t.Helper()
	code, _, _ := e.post(user, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	return code == http.StatusOK
}

// metric is the value of a metric of reg with the given label value ("" for none).
func (e *sessionsEnv) metric(name, label string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() != label {
				continue
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// Issue 30, point 1: the sessions of one user, and of the replica, are
// capped; past a cap the least recently used idle session ends; /metrics
// counts them.
func TestSessionCaps(t *testing.T) {
	e := newSessionsEnv(t, mcpserver.SessionLimits{PerUser: 3, Total: 5, Idle: time.Minute}, func(w http.ResponseWriter, r *http.Request) {})
	var sids []string
	for range 10 {
		sids = append(sids, e.open(7))
	}
	if n := e.metric("blindexec_mcp_sessions", ""); n != 3 {
		t.Errorf("after 10 initialize of one user: %v live sessions, want 3", n)
	}
	for i, sid := range sids {
		if got, want := e.alive(7, sid), i >= 7; got != want {
			t.Errorf("session %d alive = %v, want %v", i, got, want)
		}
	}
	if n := e.metric("blindexec_mcp_sessions_ended_total", "per_user"); n != 7 {
		t.Errorf("ended by the per-user limit: %v, want 7", n)
	}
	// sids[7] was used first of the three above: the replica's limit of
	// 5 ends it when the third other user comes.
	for u := 1; u <= 3; u++ {
		e.open(u)
	}
	if n := e.metric("blindexec_mcp_sessions", ""); n != 5 {
		t.Errorf("live sessions = %v, want the replica's 5", n)
	}
	if e.alive(7, sids[7]) || !e.alive(7, sids[8]) {
		t.Error("the replica's limit did not end the least recently used session")
	}
	if n := e.metric("blindexec_mcp_sessions_ended_total", "replica"); n != 1 {
		t.Errorf("ended by the replica's limit: %v, want 1", n)
	}
	// A DELETE ends a session at once.
	req, _ := http.NewRequest("DELETE", e.url, nil)
	req.Header.Set("Authorization", "Bearer user-7")
	req.Header.Set("Mcp-Session-Id", sids[9])
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.metric("blindexec_mcp_sessions", "") != 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := e.metric("blindexec_mcp_sessions", ""); n != 4 {
		t.Errorf("after a DELETE: %v live sessions, want 4", n)
	}
}

// Issue 30, point 1: when every session under the cap is busy, initialize
// is refused with a JSON-RPC error naming the limit; idle sessions expire
// after the idle setting.
func TestSessionRefusedAndIdle(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	e := newSessionsEnv(t, mcpserver.SessionLimits{PerUser: 1, Idle: 300 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		io.WriteString(w, `{}`)
	})
	sid := e.open(7)
	done := make(chan int)
	go func() {
		code, _, _ := e.post(7, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
		done <- code
	}()
	<-started
	code, _, body := e.post(7, "", strings.Replace(initialize, `"id":1`, `"id":"x"`, 1))
	var out struct {
		ID    string `json:"id"`
		Error struct {
			Code    int
			Message string
			Data    struct{ Max int }
		}
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || code != http.StatusTooManyRequests || out.ID != "x" || out.Error.Data.Max != 1 ||
		!strings.Contains(out.Error.Message, "limit of 1 sessions per user (BLINDEXEC_MCP_MAX_SESSIONS_PER_USER)") {
		t.Fatalf("initialize past a cap of busy sessions: %d %s", code, body)
	}
	if n := e.metric("blindexec_mcp_sessions_refused_total", "per_user"); n < 1 {
		t.Errorf("refusals counted: %v", n)
	}
	close(release)
	if c := <-done; c != http.StatusOK {
		t.Errorf("the busy session's call: %d", c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.metric("blindexec_mcp_sessions", "") != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := e.metric("blindexec_mcp_sessions", ""); n != 0 {
		t.Errorf("%v sessions left after the idle time", n)
	}
}
