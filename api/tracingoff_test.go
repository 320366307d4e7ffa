package api_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// Allocations of one call with tracing off, measured on the code before
// tracing existed (main at 5371c9f, just before tracing was merged, this
// test's setup, go1.26): tracing off must cost the call path nothing, not
// one allocation. Work that changes the call path re-measures them: the
// confirmation policy's check (issue 33, merged after tracing) added one
// to /v1/execute.
const (
	allocsExecuteBefore = 184
	allocsMCPBefore     = 274
)

// allocsMCPStateless is a tools/call of 2026-07-28 on /mcp (the engine's
// own answer, issue 47 point 4), measured when its allocations were cut
// (go1.26): 186, from 226; then 157 (the body read and scanned once, the
// token hashed once, the executor's own cut again); then 149 (credential
// keys on the stack, constant headers shared, the structured content by
// pointer, the body read in place); then 146 (a response body of declared
// length read without another LimitReader, the applied secrets kept, the
// token hashed from a copy on the stack); two more allowed for the background goroutines'. They may not grow
// back.
const allocsMCPStateless = 148

// TestTracingOffAllocs holds the allocations of POST /v1/execute and of a
// tools/call on /mcp, served in-process with the upstream on loopback, to
// those measured before tracing was added: off (no endpoint), tracing
// adds none.
func TestTracingOffAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures allocations (which the race detector changes)")
	}
	execute, mcp, stateless := callAllocs(t, nil)
	if execute > allocsExecuteBefore {
		t.Errorf("/v1/execute makes %.0f allocations with tracing off; before tracing: %d", execute, allocsExecuteBefore)
	}
	if mcp > allocsMCPBefore {
		t.Errorf("/mcp tools/call makes %.0f allocations with tracing off; before tracing: %d", mcp, allocsMCPBefore)
	}
	if stateless > allocsMCPStateless {
		t.Errorf("/mcp tools/call of 2026-07-28 makes %.0f allocations with tracing off; at most %d", stateless, allocsMCPStateless)
	}
}

// TestConfirmationPolicyAllocs holds a call the confirmation policy lets
// through (a GET, under "consequential", the default) to the allocations
// of the same call with no policy: deciding it needs no confirmation reads
// the plugin only. The preview a confirmation needs (the request prepared
// and its digest) was made for every call before issue 38: 73 allocations
// more on /v1/execute, 74 on /mcp.
func TestConfirmationPolicyAllocs(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures allocations (which the race detector changes)")
	}
	execute, mcp, stateless := callAllocs(t, nil)
	executeOn, mcpOn, statelessOn := callAllocs(t, func(s *api.Server) { s.Confirm = confirm.Consequential })
	if executeOn > execute {
		t.Errorf("/v1/execute: %.0f allocations a call under the policy, %.0f without", executeOn, execute)
	}
	if mcpOn > mcp {
		t.Errorf("/mcp tools/call: %.0f allocations a call under the policy, %.0f without", mcpOn, mcp)
	}
	if statelessOn > stateless {
		t.Errorf("/mcp tools/call of 2026-07-28: %.0f allocations a call under the policy, %.0f without", statelessOn, stateless)
	}
}

// callAllocs measures the allocations of a POST /v1/execute and of a
// tools/call on /mcp of a GET tool, in a session and of 2026-07-28, served in-process with the upstream on
// loopback and the records off.
func callAllocs(t *testing.T, configure func(*api.Server)) (execute, mcp, stateless float64) {
	serve, h := inProcess(t, configure)
	body := []byte(`{"name":"lookup","arguments":{"q":"acme"}}`)
	if w := serve("/v1/execute", body, h); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "ACME") {
		t.Fatalf("execute: %d %s", w.Code, w.Body)
	}
	execute = testing.AllocsPerRun(200, func() { serve("/v1/execute", body, h) })
	t.Logf("/v1/execute: %.0f allocations a call", execute)

	init := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	w := serve("/mcp", init, h)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	h.Set("Mcp-Session-Id", sid)
	h.Set("Mcp-Protocol-Version", "2025-06-18")
	if w := serve("/mcp", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), h); w.Code/100 != 2 {
		t.Fatalf("initialized: %d %s", w.Code, w.Body)
	}
	call := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{"q":"acme"}}}`)
	if w := serve("/mcp", call, h); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "ACME") {
		t.Fatalf("tools/call: %d %s", w.Code, w.Body)
	}
	mcp = testing.AllocsPerRun(200, func() { serve("/mcp", call, h) })
	t.Logf("/mcp tools/call: %.0f allocations a call", mcp)

	h.Del("Mcp-Session-Id")
	call = statelessCall(t, serve, h)
	stateless = testing.AllocsPerRun(200, func() { serve("/mcp", call, h) })
	t.Logf("/mcp tools/call of 2026-07-28: %.0f allocations a call", stateless)
	return execute, mcp, stateless
}

// BenchmarkStatelessCall is a tools/call of 2026-07-28 on /mcp through
// the API's whole handler (the token, the principal, deadlines, the
// body's scan, the Host check, the MCP handler, the executor), served
// in-process with the upstream on loopback and the records off, as
// TestTracingOffAllocs counts it: for instructions a call (callgrind)
// and allocations, which a shared machine does not change:
//
//	go test -run '^$' -bench StatelessCall -benchmem ./api/
func BenchmarkStatelessCall(b *testing.B) {
	serve, h := inProcess(b, func(s *api.Server) {
		// At serve's default level (info): the tests' debug lines are not
		// what an engine writes a call.
		s.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
		s.Executor.Logger = s.Logger
	})
	call := statelessCall(b, serve, h)
	b.ReportAllocs()
	for b.Loop() {
		serve("/mcp", call, h)
	}
}

// serveFunc serves one request in-process: its recorded answer.
type serveFunc func(path string, body []byte, header http.Header) *httptest.ResponseRecorder

// servingLookup is the API serving the lookup plugin (/mcp on), its
// upstream on loopback answering {"company":"ACME"}, the records off and
// the tool search index built (work in the background would blur a
// count): the env, the upstream's URL and a per-user token.
func servingLookup(t testing.TB, configure func(*api.Server)) (e *env, upstream, token string) {
	st := testdb.Open(t, store.DialectSQLite)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"company":"ACME"}`)
	}))
	t.Cleanup(up.Close)
	e = newEnv(t, st, func(s *api.Server) {
		s.MCP = &api.MCPConfig{}
		s.Executor.Recorder = nil
		if configure != nil {
			configure(s)
		}
	})
	token = e.addLookup(up.URL, "sk-allocs-0123456789")
	// The tool search index is built in the background after the plugin
	// is added (loading its dictionaries): a search waits for it, so that
	// its work is not counted as the calls'.
	if code, body := e.do("GET", "/v1/tools/search?q=lookup", token, nil); code != http.StatusOK {
		t.Fatalf("search: %d %v", code, body)
	}
	return e, up.URL, token
}

// inProcess is servingLookup's handler served in-process: how to serve a
// request, and the headers of a per-user token's JSON request.
func inProcess(t testing.TB, configure func(*api.Server)) (serveFunc, http.Header) {
	e, _, token := servingLookup(t, configure)
	serve := func(path string, body []byte, header http.Header) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.Header = header.Clone()
		w := httptest.NewRecorder()
		e.handler.ServeHTTP(w, req)
		return w
	}
	return serve, http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"},
		"Accept": {"application/json, text/event-stream"}}
}

// statelessCall sets h for a tools/call of the stateless era (no session,
// the client in _meta) and returns its body, which must answer.
func statelessCall(t testing.TB, serve serveFunc, h http.Header) []byte {
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", "lookup")
	call := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lookup","arguments":{"q":"acme"},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`)
	if w := serve("/mcp", call, h); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "ACME") || !strings.Contains(w.Body.String(), `"resultType":"complete"`) {
		t.Fatalf("tools/call of 2026-07-28: %d %s", w.Code, w.Body)
	}
	return call
}
