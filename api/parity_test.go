package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/access/accesstest"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress/egresstest"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// The parity catalog: a GET echoing the stored GH_TOKEN it is sent, a GET
// under a quota of one call a day, and a GET needing a permission user 7
// does not hold. None is consequential: what the rows test is the other
// rules (TestRoutesDecide holds confirmation on every route).
const (
	parityEcho   = `{"name":"parity_echo","description":"Echoes.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},"execution":{"method":"GET","base_url":"UP/echo"},"auth_config":{"type":"api_key","mapping":[{"source":"GH_TOKEN","target":"X-Token"}]}}`
	parityQuota  = `{"name":"parity_quota","description":"Counted.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},"execution":{"method":"GET","base_url":"UP/quota"}}`
	paritySecret = `{"name":"parity_secret","description":"Payroll.","perms":["hr:payroll:list"],"parameters":{"type":"object","properties":{"q":{"type":"string"}}},"execution":{"method":"GET","base_url":"UP/secret"}}`
)

// TestEveryRuleOnEveryEntryPoint (parity76): each rule the executor
// decides, driven through every entry point that sends a call by name —
// /v1/execute, /v1/tools/{name}/call, a run, /mcp in both eras and
// /mcp/agents/{name} — with a hostile case: a tool the user may not use,
// a quota spent, an upstream echoing the stored secret it was sent. Each
// is refused (or masked) alike, nothing sent when refused, each refusal
// recorded and traced, and no sink — an answer, the model's requests, a
// record, a log line, a span — holds the secret. The one fixture serves
// every subtest; docs/security.md's table names the cells.
func TestEveryRuleOnEveryEntryPoint(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	rc := newReceiver(t)
	tr := startTracing(t, rc, nil)
	var logs bytes.Buffer
	var logMu sync.Mutex
	var up *upstream
	e, up0, userToken, _, llm := decisionEnv(t, st, func(s *api.Server) {
		m := enginemcp.NewManager(st, egresstest.Client(t))
		t.Cleanup(func() { m.Close() })
		enginemcp.Invoker{Manager: m}.RegisterOn(s.Executor)
		s.MCP = &api.MCPConfig{Manager: m}
		rule := &access.Checker{Source: accesstest.Same("notes:read"), Name: "test"}
		s.Access, s.Executor.Access = rule, rule
	}, withTracing(tr, &logs, &logMu))
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"echo": r.Header.Get("X-Token")})
	})
	_ = up0
	for _, doc := range []string{parityEcho, parityQuota, paritySecret} {
		if code, out := e.do("POST", "/v1/plugins", adminToken, strings.ReplaceAll(doc, "UP", up.URL)); code != http.StatusCreated {
			t.Fatalf("add plugin: %d %v", code, out)
		}
	}
	if code, out := e.do("POST", "/v1/quotas/rules", adminToken, map[string]any{"name": "parity-once", "plugins": []string{"parity_quota"}, "calls": 1, "window": "day", "user_id": 7}); code != http.StatusCreated {
		t.Fatalf("quota rule: %d %v", code, out)
	}
	if code, out := e.do("POST", "/v1/agents", adminToken, map[string]any{"name": "parity", "tools": map[string]any{"names": []string{"parity_echo", "parity_quota", "parity_secret"}}}); code != http.StatusCreated {
		t.Fatalf("add agent: %d %v", code, out)
	}
	// The quota's one call, spent.
	if code, out := e.do("POST", "/v1/execute", userToken, map[string]any{"name": "parity_quota", "arguments": map[string]any{"q": "x"}}); code != http.StatusOK || out["ok"] != true {
		t.Fatalf("the quota's one call: %d %v", code, out)
	}

	mcpClient := func(path, era string) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "parity", Version: "1"}, nil).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: e.url + path, HTTPClient: &http.Client{Transport: api.Bearer(userToken)}},
			&sdk.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	overMCP := func(cs *sdk.ClientSession) func(string) string {
		return func(tool string) string {
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"q": "x"}})
			if err != nil {
				return "error: " + err.Error()
			}
			return string(mustJSON(t, res))
		}
	}
	overHTTP := func(path func(string) string, body func(string) any) func(string) string {
		return func(tool string) string {
			code, out := e.do("POST", path(tool), userToken, body(tool))
			return http.StatusText(code) + " " + string(mustJSON(t, out))
		}
	}
	entries := []struct {
		name string
		call func(tool string) string // the whole answer, as the caller reads it
	}{
		{"/v1/execute", overHTTP(func(string) string { return "/v1/execute" },
			func(tool string) any { return map[string]any{"name": tool, "arguments": map[string]any{"q": "x"}} })},
		{"/v1/tools/{name}/call", overHTTP(func(tool string) string { return "/v1/tools/" + tool + "/call" },
			func(string) any { return map[string]any{"q": "x"} })},
		{"/v1/runs", func(tool string) string {
			before := len(llm.Requests())
			llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: tool, Arguments: `{"q":"x"}`}}}, openaitest.Turn{Content: "done"})
			code, reply := e.do("POST", "/v1/runs", userToken, map[string]any{"messages": []map[string]string{{"role": "user", "content": "go"}}, "plugin_names": []string{tool}})
			if n := llm.Pending(); n != 0 {
				t.Fatalf("a run of %s left %d scripted turns: %d %v", tool, n, code, reply)
			}
			// What the model read of the tool is the run's answer too.
			reqs := llm.Requests()[before:]
			return http.StatusText(code) + " " + string(mustJSON(t, reply)) + " " + string(bytes.Join(reqs, nil))
		}},
		{"/mcp 2025-11-25", overMCP(mcpClient("/mcp", "2025-11-25"))},
		{"/mcp 2026-07-28", overMCP(mcpClient("/mcp", "2026-07-28"))},
		{"/mcp/agents/{name} 2025-11-25", overMCP(mcpClient("/mcp/agents/parity", "2025-11-25"))},
		{"/mcp/agents/{name} 2026-07-28", overMCP(mcpClient("/mcp/agents/parity", "2026-07-28"))},
	}
	sentTo := func(path string) int {
		n := 0
		for _, r := range up.received() {
			if strings.HasPrefix(r.uri, path) {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		rule, tool, path string
		sends            bool
		check            func(answer string) bool
	}{
		// A run offers its model only what the user may use: a tool
		// named anyway is unknown to it, never decided (nor recorded).
		{"who may use the tool", "parity_secret", "/secret", false,
			func(a string) bool {
				return strings.Contains(a, "permission_denied") || strings.Contains(a, `unknown_tool: there is no tool named \"parity_secret\"`)
			}},
		{"quota", "parity_quota", "/quota", false,
			func(a string) bool { return strings.Contains(a, "quota_exceeded") }},
		{"masking of a secret echoed", "parity_echo", "/echo", true,
			func(a string) bool { return strings.Contains(a, auth.Redacted) && !strings.Contains(a, ghToken) }},
	} {
		t.Run(c.rule, func(t *testing.T) {
			for _, ep := range entries {
				before := sentTo(c.path)
				answer := ep.call(c.tool)
				if sent := sentTo(c.path) > before; sent != c.sends || !c.check(answer) {
					t.Errorf("%s: sent %v (want %v), answered %.600s", ep.name, sent, c.sends, answer)
				}
			}
		})
	}

	// The entry points that take a caller's plugin: a per-user token's
	// inline copy of a row, loosened, is judged as the row (or refused
	// its stored credential), nothing sent.
	t.Run("an inline plugin loosening its row", func(t *testing.T) {
		inline := map[string]func(doc json.RawMessage) string{
			"/v1/execute": func(doc json.RawMessage) string {
				code, out := e.do("POST", "/v1/execute", userToken, map[string]any{"plugin": doc, "arguments": map[string]any{"q": "x"}})
				return http.StatusText(code) + " " + string(mustJSON(t, out))
			},
			"/v1/runs": func(doc json.RawMessage) string {
				var p struct{ Name string }
				json.Unmarshal(doc, &p)
				llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: p.Name, Arguments: `{"q":"x"}`}}}, openaitest.Turn{Content: "done"})
				code, reply := e.do("POST", "/v1/runs", userToken, map[string]any{"messages": []map[string]string{{"role": "user", "content": "go"}}, "plugins": []json.RawMessage{doc}})
				if n := llm.Pending(); n != 0 {
					t.Fatalf("a run of %s left %d scripted turns: %d %v", p.Name, n, code, reply)
				}
				return http.StatusText(code) + " " + string(mustJSON(t, reply))
			},
		}
		loosened := func(doc, old, new string) json.RawMessage {
			return json.RawMessage(strings.Replace(strings.ReplaceAll(doc, "UP", up.URL), old, new, 1))
		}
		for _, c := range []struct {
			name, path, want string
			doc              json.RawMessage
		}{
			{"its perms dropped", "/secret", "permission_denied", loosened(paritySecret, `"perms":["hr:payroll:list"],`, "")},
			{"its URL changed, the stored secret kept", "/elsewhere", "credential_not_bound", loosened(parityEcho, "/echo", "/elsewhere")},
			{"its URL changed, past the row's quota", "/quota2", "quota_exceeded", loosened(parityQuota, "/quota", "/quota2")},
		} {
			for name, call := range inline {
				before := sentTo(c.path)
				if answer := call(c.doc); sentTo(c.path) != before || !strings.Contains(answer, c.want) {
					t.Errorf("%s, %s: sent %d, answered %.600s; want %s, nothing sent", name, c.name, sentTo(c.path)-before, answer, c.want)
				}
			}
		}
	})

	// The MCP proxy route, a tool without a row and then its row: the
	// stored secret an upstream MCP tool echoes (in its text and its
	// structured content) is masked in the result relayed whole.
	t.Run("the MCP proxy masks a secret echoed", func(t *testing.T) {
		const medKey = "med-parity-secret-0123456789"
		if code, out := e.do("PUT", "/v1/credentials/7/MED_KEY", adminToken, map[string]string{"value": medKey}); code != http.StatusNoContent {
			t.Fatalf("store: %d %v", code, out)
		}
		mcpUp := mcptest.New(t)
		mcpUp.AddTool("whoami", "Who the server thinks you are.", `{"type":"object"}`, func(context.Context, map[string]any) *sdk.CallToolResult {
			calls := mcpUp.Calls()
			got := calls[len(calls)-1].Header.Get("Authorization")
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: got}}, StructuredContent: map[string]any{"authorization": got}}
		})
		if code, out := e.do("POST", "/v1/mcp/servers", adminToken, map[string]any{"mcp_id": "med", "name": "med", "url": mcpUp.Endpoint,
			"auth_config": map[string]any{"type": "bearer", "token": "MED_KEY"}}); code != http.StatusCreated {
			t.Fatalf("register: %d %v", code, out)
		}
		call := func(what string) {
			t.Helper()
			before := len(mcpUp.Calls())
			code, out := e.do("POST", "/v1/mcp/proxy/med/tools/whoami/call?user_id=7", serviceToken, map[string]any{})
			answer := string(mustJSON(t, out))
			if code != http.StatusOK || len(mcpUp.Calls()) != before+1 || strings.Contains(answer, medKey) || !strings.Contains(answer, auth.Redacted) {
				t.Errorf("%s: %d %.600s, want the secret masked", what, code, answer)
			}
		}
		call("a tool without a row")
		if code, out := e.do("POST", "/v1/plugins/import/mcp", adminToken, map[string]any{"server": "med", "user_id": 7}); code != http.StatusOK {
			t.Fatalf("import: %d %v", code, out)
		}
		call("its row")
	})

	// Read before any rule: a body over the limit (413) and, on the MCP
	// endpoints, a request to loopback naming another host (DNS
	// rebinding, 403), on every entry point that reads a body.
	t.Run("body limit and Host", func(t *testing.T) {
		huge := `{"q":"` + strings.Repeat("x", 8<<20) + `"}`
		mcpHeaders := func(era string) map[string]string {
			return map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": era}
		}
		for _, c := range []struct {
			path   string
			header map[string]string
			status int
			says   string
		}{
			{"/v1/execute", nil, http.StatusRequestEntityTooLarge, "body_too_large"},
			{"/v1/tools/parity_echo/call", nil, http.StatusRequestEntityTooLarge, "body_too_large"},
			{"/v1/mcp/proxy/med/tools/echo/call", nil, http.StatusRequestEntityTooLarge, "body_too_large"},
			{"/v1/runs", nil, http.StatusRequestEntityTooLarge, "body_too_large"},
			{"/v1/runs/01a229ef-bebd-7096-bf8d-9c52690f5bf6/resume", nil, http.StatusRequestEntityTooLarge, "body_too_large"},
			{"/v1/pending/x", nil, http.StatusRequestEntityTooLarge, "body_too_large"},
			{"/mcp", mcpHeaders("2025-11-25"), http.StatusRequestEntityTooLarge, "body_too_large"},
			{"/mcp", mcpHeaders("2026-07-28"), http.StatusRequestEntityTooLarge, "body_too_large"},
			{"/mcp/agents/parity", mcpHeaders("2025-11-25"), http.StatusRequestEntityTooLarge, "body_too_large"},
			{"/mcp/agents/parity", mcpHeaders("2026-07-28"), http.StatusRequestEntityTooLarge, "body_too_large"},
		} {
			req, _ := http.NewRequest("POST", e.url+c.path, strings.NewReader(huge))
			req.Header.Set("Authorization", "Bearer "+userToken)
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			code, body := send(t, req)
			if code != c.status || !strings.Contains(body, c.says) {
				t.Errorf("%s %v over the limit: %d %.300s", c.path, c.header["MCP-Protocol-Version"], code, body)
			}
		}
		for _, path := range []string{"/mcp", "/mcp/agents/parity"} {
			for _, era := range []string{"2025-11-25", "2026-07-28"} {
				req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
				req.Header.Set("Authorization", "Bearer "+userToken)
				for k, v := range mcpHeaders(era) {
					req.Header.Set(k, v)
				}
				req.Host = "evil.example"
				if code, body := send(t, req); code != http.StatusForbidden || !strings.Contains(body, "invalid Host") {
					t.Errorf("%s %s naming another host: %d %.300s", path, era, code, body)
				}
			}
		}
	})

	t.Run("records and traces", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.rec.Close(ctx)
		_, recs := e.do("GET", "/v1/executions?limit=500", adminToken, nil)
		refused := map[string]int{}
		for _, r := range recs["executions"].([]any) {
			m := r.(map[string]any)
			if code, _ := m["error_class"].(string); code != "" {
				refused[m["plugin_name"].(string)+" "+code]++
			}
		}
		// Every entry point's refusal but the run's of a tool it never
		// offered, and each inline plugin's on /v1/execute and in a run.
		for want, n := range map[string]int{"parity_secret permission_denied": len(entries) - 1 + 2, "parity_quota quota_exceeded": len(entries) + 2,
			"parity_echo credential_not_bound": 2} {
			if refused[want] != n {
				t.Errorf("%d records of %s, want %d: %v", refused[want], want, n, refused)
			}
		}
		waitSpans(t, tr, rc, "execute_tool parity_echo")
		spans, raw := rc.received()
		traced := map[string]int{}
		for _, s := range spans {
			if strings.HasPrefix(s.Name, "execute_tool parity_") {
				traced[s.Name+" "+attrString(s, "error.type")]++
			}
		}
		for want, n := range map[string]int{"execute_tool parity_secret permission_denied": len(entries) - 1 + 2,
			"execute_tool parity_quota quota_exceeded": len(entries) + 2, "execute_tool parity_echo credential_not_bound": 2,
			"execute_tool parity_echo ": len(entries)} {
			if traced[want] != n {
				t.Errorf("%d spans %q, want %d: %v", traced[want], want, n, traced)
			}
		}
		logMu.Lock()
		sinks := [][]byte{mustJSON(t, recs), logs.Bytes()}
		logMu.Unlock()
		for i, s := range append(sinks, raw...) {
			if bytes.Contains(s, []byte(ghToken)) {
				t.Errorf("sink %d (records, logs, spans) holds the secret", i)
			}
		}
	})
}

// send sends req, answering its status and body.
func send(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
