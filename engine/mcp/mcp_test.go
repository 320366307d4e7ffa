package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// servers is an in-memory registry standing in for the store.
type servers struct {
	mu   sync.Mutex
	rows map[string]*store.MCPServer
}

func (s *servers) add(row store.MCPServer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil {
		s.rows = map[string]*store.MCPServer{}
	}
	s.rows[row.ID] = &row
}

func (s *servers) GetMCPServer(_ context.Context, ref string) (*store.MCPServer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rows {
		if r.ID == ref || r.Name == ref {
			c := *r
			return &c, nil
		}
	}
	return nil, store.ErrNotFound
}

func (s *servers) UpdateMCPToolsCache(context.Context, string, store.JSON, time.Time) error {
	return nil
}

// setup registers up as server "srv-1" (name "test") with auth and
// returns an executor running MCP plugins through a fresh Manager.
func setup(t *testing.T, row store.MCPServer) (*engine.Executor, *mcp.Manager) {
	t.Helper()
	reg := &servers{}
	reg.add(row)
	m := mcp.NewManager(reg, egresstest.Client(t))
	t.Cleanup(func() { m.Close() })
	ex := engine.NewExecutor(egresstest.Client(t))
	ex.Register(plugins.TypeMCP, mcp.Invoker{Manager: m})
	return ex, m
}

func httpServer(up *mcptest.Server) store.MCPServer {
	return store.MCPServer{ID: "srv-1", Name: "test", Transport: store.TransportStreamableHTTP, URL: up.Endpoint,
		Headers:    store.JSON(`{"X-Tenant":"acme"}`),
		AuthConfig: store.JSON(`{"type":"bearer","token":"mcp_token"}`)}
}

func mcpPlugin(tool string, fixed map[string]any) *plugins.Plugin {
	return &plugins.Plugin{
		Name:                strings.ReplaceAll(tool, ".", "_"),
		Description:         "test",
		Parameters:          json.RawMessage(`{"type":"object","properties":{"disease_id":{"type":"string"},"include_drugs":{"type":"string"},"patient_age":{"type":"integer"},"severity":{"type":"string"},"reason":{"type":"string"},"ms":{"type":"integer"},"text":{"type":"string"}}}`),
		Execution:           plugins.Execution{Type: plugins.TypeMCP, MCPID: "srv-1", ToolName: tool},
		RequiredCredentials: []string{"mcp_token"},
		FixedParams:         fixed,
	}
}

var tokenA = map[string]string{"mcp_token": "tok-user-a-0123456789"}

// TestSeed004EndToEnd: seed 004's tool with its fixed params, through the
// executor: the server receives the merged flat arguments, the LLM's
// schema lacks the fixed ones, and the MCP result is the output.
func TestSeed004EndToEnd(t *testing.T) {
	up := mcptest.New(t)
	ex, _ := setup(t, httpServer(up))
	p := mcpPlugin("generate_disease_treatment_plan", map[string]any{"disease_id": "disease_000001", "include_drugs": "true"})

	llm := string(p.Tool(nil).Function.Parameters)
	if strings.Contains(llm, "disease_id") || strings.Contains(llm, "include_drugs") || !strings.Contains(llm, "patient_age") {
		t.Errorf("LLM schema = %s, want patient_age without the fixed params", llm)
	}

	res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{"patient_age":45,"severity":"moderate"}`), Credentials: tokenA})
	if err != nil || !res.OK {
		t.Fatalf("Execute = %+v, %v", res, err)
	}
	calls := up.Calls()
	if len(calls) != 1 {
		t.Fatalf("server got %d calls, want 1", len(calls))
	}
	got := calls[0].Arguments
	if got["disease_id"] != "disease_000001" || got["include_drugs"] != "true" || got["patient_age"] != float64(45) || got["severity"] != "moderate" {
		t.Errorf("server got arguments %v, want fixed params merged with the LLM's", got)
	}
	if h := calls[0].Header; h.Get("Authorization") != "Bearer "+tokenA["mcp_token"] || h.Get("X-Tenant") != "acme" {
		t.Errorf("server got headers %v, want the bearer token and X-Tenant", h)
	}
	var out struct {
		Content           []map[string]any
		IsError           *bool
		StructuredContent map[string]any
	}
	if err := json.Unmarshal(res.Output, &out); err != nil || out.IsError == nil || *out.IsError || len(out.Content) != 1 {
		t.Fatalf("output = %s (%v), want an MCP result", res.Output, err)
	}
	sc := out.StructuredContent
	if plan, _ := sc["treatment_plan"].(map[string]any); plan["disease_id"] != "disease_000001" {
		t.Errorf("structuredContent = %v", out.StructuredContent)
	}
	if strings.Contains(string(res.Output), tokenA["mcp_token"]) {
		t.Errorf("output leaks the token: %s", res.Output)
	}
}

// TestPluginHeaders: a plugin's execution.headers go on its own calls
// only, over the server's headers and under its auth, though plugins share
// the session.
func TestPluginHeaders(t *testing.T) {
	up := mcptest.New(t)
	ex, _ := setup(t, httpServer(up))
	withHeaders := mcpPlugin("echo", nil)
	withHeaders.Execution.Headers = map[string]string{"X-Route": "blue", "X-Tenant": "plugin-tenant", "Authorization": "Bearer forged"}
	plain := mcpPlugin("echo", nil)
	for _, p := range []*plugins.Plugin{withHeaders, plain} {
		if res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{"text":"hi"}`), Credentials: tokenA}); err != nil || !res.OK {
			t.Fatalf("Execute = %+v, %v", res, err)
		}
	}
	calls := up.Calls()
	if len(calls) != 2 || up.Sessions() != 1 {
		t.Fatalf("server got %d calls in %d sessions, want 2 in 1", len(calls), up.Sessions())
	}
	tests := []struct {
		name          string
		h             http.Header
		route, tenant string
	}{
		{"plugin with headers", calls[0].Header, "blue", "plugin-tenant"},
		{"plugin without", calls[1].Header, "", "acme"},
	}
	for _, tt := range tests {
		if tt.h.Get("X-Route") != tt.route || tt.h.Get("X-Tenant") != tt.tenant || tt.h.Get("Authorization") != "Bearer "+tokenA["mcp_token"] {
			t.Errorf("%s: server got X-Route %q, X-Tenant %q, Authorization %q; want %q, %q and the user's token",
				tt.name, tt.h.Get("X-Route"), tt.h.Get("X-Tenant"), tt.h.Get("Authorization"), tt.route, tt.tenant)
		}
	}
}

// TestSessionsPerCredentials: calls reuse a session per (server,
// credentials); another user's credentials get their own.
func TestSessionsPerCredentials(t *testing.T) {
	up := mcptest.New(t)
	ex, _ := setup(t, httpServer(up))
	p := mcpPlugin("echo", nil)
	call := func(creds map[string]string) {
		t.Helper()
		res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{"text":"hi"}`), Credentials: creds})
		if err != nil || !res.OK {
			t.Fatalf("Execute = %+v, %v", res, err)
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { call(tokenA) })
	}
	wg.Wait()
	call(tokenA)
	if n := up.Sessions(); n != 1 {
		t.Errorf("9 calls of one user opened %d sessions, want 1", n)
	}
	tokenB := map[string]string{"mcp_token": "tok-user-b-9876543210"}
	call(tokenB)
	if n := up.Sessions(); n != 2 {
		t.Errorf("a second user makes %d sessions, want 2", n)
	}
	calls := up.Calls()
	if last := calls[len(calls)-1].Header.Get("Authorization"); last != "Bearer "+tokenB["mcp_token"] {
		t.Errorf("second user's call carried %q", last)
	}

	// A missing credential refuses the call before anything is sent.
	res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{}`)})
	var refused *engine.RefusedError
	if !errors.As(err, &refused) || refused.Code != engine.CodeMissingCredentials {
		t.Errorf("without credentials: %+v, %v; want missing_credentials", res, err)
	}
}

// TestReconnect: a session the server forgot is reopened once,
// transparently.
func TestReconnect(t *testing.T) {
	up := mcptest.New(t)
	ex, _ := setup(t, httpServer(up))
	p := mcpPlugin("echo", nil)
	for i := range 2 {
		res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{}`), Credentials: tokenA})
		if err != nil || !res.OK {
			t.Fatalf("call %d: %+v, %v", i, res, err)
		}
		up.ForgetSessions()
	}
	if n := up.Sessions(); n != 2 {
		t.Errorf("sessions = %d, want 2 (one reopened)", n)
	}
	if n := len(up.Calls()); n != 2 {
		t.Errorf("server ran %d calls, want 2 (no duplicate)", n)
	}
}

// TestFailures: tool-level errors, JSON-RPC errors, timeouts, unreachable
// and forbidden servers each get their code.
func TestFailures(t *testing.T) {
	up := mcptest.New(t)
	ex, _ := setup(t, httpServer(up))
	for _, tc := range []struct {
		tool, args, code, msg string
	}{
		{"fail", `{"reason":"disk full"}`, mcp.CodeToolError, "failed: disk full"},
		{"no_such_tool", `{}`, mcp.CodeMCPError, "no_such_tool"},
		{"slow", `{"ms":5000}`, engine.CodeTimeout, ""},
	} {
		p := mcpPlugin(tc.tool, nil)
		p.Execution.TimeoutMS = 300
		res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(tc.args), Credentials: tokenA})
		if err != nil || res.OK || res.Error == nil || res.Error.Code != tc.code || !strings.Contains(res.Error.Message, tc.msg) {
			t.Errorf("%s: %+v (%v), %v; want code %s with %q", tc.tool, res, res.Error, err, tc.code, tc.msg)
		}
		if tc.code == mcp.CodeToolError && !strings.Contains(string(mustJSON(res.Error.Details)), "isError") {
			t.Errorf("tool error details = %s, want the MCP result", mustJSON(res.Error.Details))
		}
	}

	// A closed port: nothing listens.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	row := httpServer(up)
	row.URL = "http://" + addr + "/mcp"
	ex2, _ := setup(t, row)
	res, _ := ex2.Execute(context.Background(), engine.Call{Plugin: mcpPlugin("echo", nil), Arguments: json.RawMessage(`{}`), Credentials: tokenA})
	if res.OK || res.Error.Code != engine.CodeTransportError {
		t.Errorf("unreachable server: %+v", res.Error)
	}

	// The default egress policy denies loopback.
	reg := &servers{}
	reg.add(httpServer(up))
	m := mcp.NewManager(reg, egress.NewClient(egresstest.Dialer("")))
	defer m.Close()
	ex3 := engine.NewExecutor(egresstest.Client(t))
	ex3.Register(plugins.TypeMCP, mcp.Invoker{Manager: m})
	res, _ = ex3.Execute(context.Background(), engine.Call{Plugin: mcpPlugin("echo", nil), Arguments: json.RawMessage(`{}`), Credentials: tokenA})
	if res.OK || res.Error.Code != engine.CodeEgressDenied {
		t.Errorf("loopback under the default policy: %+v", res.Error)
	}

	// An unregistered server refuses the call.
	p := mcpPlugin("echo", nil)
	p.Execution.MCPID = "nope"
	_, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{}`), Credentials: tokenA})
	var refused *engine.RefusedError
	if !errors.As(err, &refused) || refused.Code != engine.CodeInvalidPlugin {
		t.Errorf("unknown server: %v", err)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestToolsCache: tool lists are cached per credential set, refreshed on
// demand, and a tool missing from the cache triggers one refresh.
func TestToolsCache(t *testing.T) {
	up := mcptest.New(t)
	_, m := setup(t, httpServer(up))
	ctx := context.Background()
	tools, err := m.Tools(ctx, "test", tokenA, false)
	if err != nil || len(tools) < 7 {
		t.Fatalf("Tools = %d tools, %v", len(tools), err)
	}
	up.AddTool("added_later", "new", `{"type":"object"}`, nil)
	if tools, _ = m.Tools(ctx, "srv-1", tokenA, false); hasTool(tools, "added_later") {
		t.Error("the cached list already has the new tool")
	}
	// Lists are cached per credential set: another user's is fetched
	// with their own credentials.
	if tools, _ = m.Tools(ctx, "srv-1", map[string]string{"mcp_token": "tok-user-b-9876543210"}, false); !hasTool(tools, "added_later") {
		t.Error("another user's credentials got the first user's cached list")
	}
	if _, err := m.Tool(ctx, "srv-1", "added_later", tokenA, ""); err != nil {
		t.Errorf("Tool(added_later) = %v, want it found by a refresh", err)
	}
	var nf *mcp.ToolNotFoundError
	if _, err := m.Tool(ctx, "srv-1", "never", tokenA, ""); !errors.As(err, &nf) || nf.Tool != "never" {
		t.Errorf("Tool(never) = %v, want ToolNotFoundError", err)
	}
	if _, err := m.Tools(ctx, "nope", nil, false); !errors.Is(err, mcp.ErrServerNotFound) {
		t.Errorf("Tools(nope) = %v, want ErrServerNotFound", err)
	}
}

func hasTool(tools []*sdk.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// TestSSE: the SSE transport works like streamable HTTP.
func TestSSE(t *testing.T) {
	up := mcptest.NewSSE(t)
	row := httpServer(up)
	row.Transport = store.TransportSSE
	ex, _ := setup(t, row)
	res, err := ex.Execute(context.Background(), engine.Call{Plugin: mcpPlugin("echo", nil), Arguments: json.RawMessage(`{"text":"over sse"}`), Credentials: tokenA})
	if err != nil || !res.OK || !strings.Contains(string(res.Output), "over sse") {
		t.Fatalf("Execute over SSE = %+v, %v", res, err)
	}
	for _, h := range up.Headers() { // the event stream's GET and every POST
		if h.Get("Authorization") != "Bearer "+tokenA["mcp_token"] || h.Get("X-Tenant") != "acme" {
			t.Errorf("SSE request headers = %v", h)
		}
	}
}

// TestTrace: a traced MCP call reports the tools/call it sent, to the
// server's URL, the arguments masked like the output.
func TestTrace(t *testing.T) {
	up := mcptest.New(t)
	ex, _ := setup(t, httpServer(up))
	p := mcpPlugin("echo", nil)
	res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{"text":"my token is ` + tokenA["mcp_token"] + `"}`),
		Credentials: tokenA, Trace: true})
	if err != nil || !res.OK || res.Request == nil {
		t.Fatalf("Execute = %+v, %v", res, err)
	}
	if r := res.Request; r.Method != "tools/call" || r.URL != up.Endpoint || r.Body != `{"arguments":{"text":"my token is [REDACTED]"},"name":"echo"}` {
		t.Errorf("request sent: %+v", r)
	}
	if res, _ := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{"text":"hi"}`), Credentials: tokenA}); res.Request != nil {
		t.Errorf("a call without trace reports %+v", res.Request)
	}
}

// TestTraceHidesServerURLKey (trace82): a traced call to a server
// registered with its key in the URL's query (a hosted gateway's
// …/mcp?api_key=…, review80) reported the URL whole.
func TestTraceHidesServerURLKey(t *testing.T) {
	const key = "gw-Trace82-99887766"
	up := mcptest.New(t)
	row := httpServer(up)
	row.URL = up.Endpoint + "?tenant=acme&api_key=" + key
	ex, _ := setup(t, row)
	res, err := ex.Execute(context.Background(), engine.Call{Plugin: mcpPlugin("echo", nil), Arguments: json.RawMessage(`{"text":"hi"}`),
		Credentials: tokenA, Trace: true})
	if err != nil || !res.OK || res.Request == nil {
		t.Fatalf("Execute = %+v, %v", res, err)
	}
	if u := res.Request.URL; strings.Contains(u, key) || !strings.HasPrefix(u, up.Endpoint+"?tenant=acme&api_key=") {
		t.Errorf("the trace's URL %s: want the server's, its key hidden", u)
	}
}
