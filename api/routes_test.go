package api_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/egress/egresstest"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// registeredRoutes lists the patterns every mux.Handle and mux.HandleFunc
// of the API's and the console's sources registers: a string literal as
// its value, any other expression as written ("GET "+connections.StartPath).
func registeredRoutes(t *testing.T) []string {
	t.Helper()
	var routes []string
	fset := token.NewFileSet()
	for _, dir := range []string{".", "../console"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc" {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "mux" {
					return true
				}
				if lit, ok := call.Args[0].(*ast.BasicLit); ok {
					v, _ := strconv.Unquote(lit.Value)
					routes = append(routes, v)
					return true
				}
				var b bytes.Buffer
				printer.Fprint(&b, fset, call.Args[0])
				routes = append(routes, b.String())
				return true
			})
		}
	}
	return routes
}

// routeSends classifies every route the API and the console register:
// whether it can send a tool call to an upstream. A route that sends is
// driven by TestRoutesDecide with a call the decision must hold or
// refuse. `blindexec mcp serve --stdio` serves the /mcp session code
// (engine/mcpserver) over pipes: cmd/blindexec's TestCLIMCP holds a
// consequential call there.
var routeSends = map[string]bool{
	"POST /v1/execute":                                   true, // the console's Try it too
	"POST /v1/tools/{name}/call":                         true,
	"POST /v1/mcp/proxy/{mcp_id}/tools/{tool_name}/call": true,
	"POST /v1/runs":                                      true,
	"POST /v1/runs/{run_id}/resume":                      true,
	"/mcp":                                               true,
	"/mcp/agents/{name}":                                 true,

	"GET /healthz": false, "GET /readyz": false, "GET /metrics": false, "GET /v1/openapi.json": false,
	"GET /v1/plugins": false, "POST /v1/plugins": false, "GET /v1/plugins/{name}": false, "PUT /v1/plugins/{name}": false,
	"PATCH /v1/plugins/{name}": false, "DELETE /v1/plugins/{name}": false, "POST /v1/plugins/import/openapi": false,
	"POST /v1/plugins/consequential": false, "GET /v1/sources": false, "POST /v1/plugins/perms": false,
	"GET /v1/tools": false, "GET /v1/tools/search": false, "GET /v1/executions": false, "GET /v1/tools/{name}/access": false,
	"GET /v1/runs/{run_id}": false, "GET /v1/runs": false,
	"GET /v1/credentials/{user_id}": false, "PUT /v1/credentials/{user_id}/{key}": false,
	"DELETE /v1/credentials/{user_id}/{key}": false, "POST /v1/credentials/rotate": false,
	"GET /v1/tokens": false, "POST /v1/tokens": false, "DELETE /v1/tokens/{id}": false,
	"GET /v1/audit":   false, // the administrators' log
	"POST /v1/agents": false, "GET /v1/agents": false, "GET /v1/agents/{name}": false, "PUT /v1/agents/{name}": false, "DELETE /v1/agents/{name}": false,
	"/mcp/openapi":             false, // reads OpenAPI documents; it calls no API
	"/":                        false, // the API's 404; the console's hands every other path to the API's routes, classified here
	"POST /v1/oauth/providers": false, "GET /v1/oauth/providers": false, "GET /v1/oauth/providers/{name}": false,
	"DELETE /v1/oauth/providers/{name}": false, "POST /v1/connections/{provider}/authorize": false,
	"GET /v1/connections": false, "DELETE /v1/connections/{provider}": false,
	`"GET " + connections.StartPath`: false, `"GET " + connections.CallbackPath`: false, `"POST " + connections.ConfirmPath`: false,
	// An MCP server's tools/list (registration, listing, import), never a tools/call.
	"GET /v1/mcp/servers": false, "POST /v1/mcp/servers": false, "DELETE /v1/mcp/servers/{id}": false,
	"GET /v1/mcp/servers/{id}/tools": false, "POST /v1/plugins/import/mcp": false,
	"GET /v1/pending": false, "POST /v1/pending/{id}": false, // a decision; the call is sent by its route
	"GET /v1/quotas/rules": false, "POST /v1/quotas/rules": false, "DELETE /v1/quotas/rules/{name}": false, "GET /v1/quotas": false,
	"GET /console/{$}": false, "GET /console/assets/": false, "GET /console": false, "POST /console/login": false,
	"POST /console/logout": false, "GET /console/api/session": false,
	`"POST " + reportPath`: false, "/console/": false,
}

// TestRoutesDecide (issue 44): every route registered is classified in
// routeSends — a route added without a line here fails — and every route
// that can send is driven with calls the one decision must hold for a
// person or refuse: a per-user token's inline copy of a consequential
// row claiming "consequential": false, the row by name, an MCP tool its
// server does not mark read-only, a paused run resumed by the
// administrator whose next call is an inline plugin differing from the
// row. Nothing reaches the loopback upstreams.
func TestRoutesDecide(t *testing.T) {
	registered := registeredRoutes(t)
	for _, r := range registered {
		if _, ok := routeSends[r]; !ok {
			t.Errorf("route %s is not classified in routeSends: say whether it sends a tool call, and drive it below if it does", r)
		}
	}
	for r := range routeSends {
		if !slices.Contains(registered, r) {
			t.Errorf("routeSends classifies %s, which no source registers", r)
		}
	}
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		mcpUp := mcptest.New(t)
		e, up, userToken, copyOf, llm := decisionEnv(t, st, func(s *api.Server) {
			m := enginemcp.NewManager(st, egresstest.Client(t))
			t.Cleanup(func() { m.Close() })
			enginemcp.Invoker{Manager: m}.RegisterOn(s.Executor)
			s.MCP = &api.MCPConfig{Manager: m}
			rule := &access.Checker{} // open: what /mcp/agents/{name} is judged by
			s.Access, s.Executor.Access = rule, rule
		})
		if code, out := e.do("POST", "/v1/agents", adminToken, map[string]any{"name": "notes", "tools": map[string]any{"names": []string{"notes_get"}}}); code != http.StatusCreated {
			t.Fatalf("add agent: %d %v", code, out)
		}
		if code, out := e.do("POST", "/v1/mcp/servers", adminToken, map[string]any{"mcp_id": "med", "name": "med", "url": mcpUp.Endpoint}); code != http.StatusCreated {
			t.Fatalf("register: %d %v", code, out)
		}
		claim := copyOf(notesGet, `"consequential":false,`)
		messages := []map[string]string{{"role": "user", "content": "go"}}
		held := func(route string, code int, body map[string]any) {
			t.Helper()
			if code != http.StatusConflict || errCode(body) != "confirmation_required" {
				t.Errorf("%s: %d %v, want 409 confirmation_required", route, code, body)
			}
		}
		drive := map[string]func(){
			"POST /v1/execute": func() {
				code, body := e.do("POST", "/v1/execute", userToken, map[string]any{"plugin": claim, "arguments": map[string]any{"q": "x"}})
				held("/v1/execute", code, body)
			},
			"POST /v1/tools/{name}/call": func() {
				code, body := e.do("POST", "/v1/tools/notes_get/call", userToken, map[string]any{"q": "x"})
				held("/v1/tools/{name}/call", code, body)
			},
			"POST /v1/mcp/proxy/{mcp_id}/tools/{tool_name}/call": func() {
				code, body := e.do("POST", "/v1/mcp/proxy/med/tools/rb.answer/call", userToken, map[string]any{"question": "restart?"})
				held("the MCP proxy", code, body)
			},
			"POST /v1/runs": func() {
				llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "notes_get", Arguments: `{"q":"x"}`}}})
				code, reply := e.do("POST", "/v1/runs", userToken, map[string]any{"messages": messages, "plugins": []json.RawMessage{claim}})
				if code != http.StatusOK || reply["status"] != "paused" {
					t.Errorf("/v1/runs: %d %v, want paused", code, reply)
				}
			},
			"POST /v1/runs/{run_id}/resume": func() {
				exfil := json.RawMessage(strings.Replace(string(copyOf(notesGet, "")), up.URL+"/notes", up.URL+"/steal", 1))
				llm.Script(
					openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "drop_note", Arguments: `{"q":"1"}`}}},
					openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "notes_get", Arguments: `{"q":"x"}`}}},
					openaitest.Turn{Content: "done"},
				)
				_, reply := e.do("POST", "/v1/runs", userToken, map[string]any{"messages": messages, "plugins": []json.RawMessage{copyOf(dropNote, ""), exfil}})
				id := reply["pending"].([]any)[0].(map[string]any)["id"].(string)
				code, done := e.do("POST", "/v1/runs/"+reply["run_id"].(string)+"/resume", adminToken, map[string]any{"decisions": []map[string]string{{"id": id, "decision": "deny"}}})
				steps, _ := done["steps"].([]any)
				if code != http.StatusOK || len(steps) != 2 || !strings.HasPrefix(steps[1].(map[string]any)["error"].(string), "credential_not_bound") {
					t.Errorf("resume: %d %v, want the inline notes_get refused", code, done)
				}
			},
			"/mcp": func() {
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
					Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(userToken)}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "notes_get", Arguments: map[string]any{"q": "x"}})
				if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "confirmation_required") {
					t.Errorf("/mcp: %v %+v, want a tool error naming the pending call", err, res)
				}
			},
		}
		drive["/mcp/agents/{name}"] = func() {
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
				Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp/agents/notes", HTTPClient: &http.Client{Transport: api.Bearer(userToken)}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "notes_get", Arguments: map[string]any{"q": "x"}})
			if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "confirmation_required") {
				t.Errorf("/mcp/agents/notes: %v %+v, want a tool error naming the pending call", err, res)
			}
		}
		for r, sends := range routeSends {
			if sends && drive[r] == nil {
				t.Errorf("route %s sends, and nothing drives it here", r)
			}
		}
		for r, f := range drive {
			t.Run(r, func(t *testing.T) { f() })
		}
		if got := up.received(); len(got) != 0 {
			t.Errorf("%d requests reached the upstream: %v", len(got), got[0].method+" "+got[0].uri)
		}
		if calls := mcpUp.Calls(); len(calls) != 0 {
			t.Errorf("%d tools/calls reached the MCP server", len(calls))
		}
	})
}
