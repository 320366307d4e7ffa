package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/mcpts"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

const (
	mcpAdmin   = "admin-token-mcp"
	mcpService = "service-token-mcp"
	medSecret  = "med-secret-0123456789"
)

type mcpEnv struct {
	t        *testing.T
	url      string
	st       *store.Store
	up       *mcptest.Server
	userTok  string // user 7's per-user token
	logs     *SyncBuffer
	cfg      *MCPConfig
	ex       *engine.Executor
	closedAt string // a loopback URL nothing listens on
}

// newMCPEnv serves the MCP routes (and GET /v1/tools?format=dynamic, as
// listTools dispatches it) on st, with user 7 holding the med server's
// token.
func newMCPEnv(t *testing.T, st *store.Store, opts ...func(*Server)) *mcpEnv {
	key := make([]byte, 32)
	rand.Read(key)
	kr, err := auth.ParseKeyring(base64.StdEncoding.EncodeToString(key), "")
	if err != nil {
		t.Fatal(err)
	}
	logs := &SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	creds := auth.NewCredentialService(st, kr)
	// The upstream first: cleanups run last-in first-out, so the manager
	// closes its sessions (their standalone streams) before the upstream's
	// Close, which waits for every open request, runs.
	up := mcptest.New(t)
	m := enginemcp.NewManager(st, egresstest.Client(t))
	m.Logger = log
	t.Cleanup(func() { m.Close() })
	ex := engine.NewExecutor(egresstest.Client(t))
	enginemcp.Invoker{Manager: m}.RegisterOn(ex)
	ex.Credentials, ex.Logger = creds, log
	cfg := &MCPConfig{Manager: m}
	s := &Server{Store: st, Creds: creds, Executor: ex, AdminToken: mcpAdmin, ServiceToken: mcpService, Logger: log, MCP: cfg}
	for _, o := range opts {
		o(s)
	}
	hs := httptest.NewServer(CheckedHandler(t, s.Handler()))
	t.Cleanup(hs.Close)
	cfg.PublicURL = hs.URL

	ctx := context.Background()
	if err := creds.Set(ctx, 7, "med_token", medSecret, "test"); err != nil {
		t.Fatal(err)
	}
	tok, hash := auth.NewToken()
	if err := st.CreateToken(ctx, &store.Token{UserID: 7, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	return &mcpEnv{t: t, url: hs.URL, st: st, up: up, userTok: tok, logs: logs, cfg: cfg, ex: ex, closedAt: closed}
}

func (e *mcpEnv) do(method, path, token string, body any, header ...string) (int, map[string]any) {
	e.t.Helper()
	return DoJSON(e.t, e.url, method, path, token, body, header...)
}

func errCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (e *mcpEnv) register() {
	e.t.Helper()
	for _, spec := range []map[string]any{
		{"mcp_id": "med", "name": "med", "url": e.up.Endpoint, "auth_config": map[string]any{"type": "bearer", "token": "med_token"}},
		{"mcp_id": "down", "name": "down", "url": e.closedAt},
	} {
		if code, out := e.do("POST", "/v1/mcp/servers", mcpAdmin, spec); code != http.StatusCreated {
			e.t.Fatalf("register %v: %d %v", spec["name"], code, out)
		}
	}
}

func TestMCPServersAndImport(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newMCPEnv(t, st)
		e.register()
		if code, out := e.do("POST", "/v1/mcp/servers", mcpAdmin, map[string]any{"name": "med", "url": e.up.Endpoint}); code != http.StatusConflict {
			t.Errorf("duplicate name: %d %v", code, out)
		}
		if code, out := e.do("POST", "/v1/mcp/servers", mcpAdmin, map[string]any{"name": "bad name", "transport": "carrier-pigeon"}); code != http.StatusBadRequest || errCode(out) != "invalid_mcp_server" {
			t.Errorf("invalid server: %d %v", code, out)
		}
		if code, out := e.do("POST", "/v1/mcp/servers", mcpAdmin, map[string]any{"name": "shell", "transport": "stdio", "command": []string{"sh", "-c", "id"}}); code != http.StatusForbidden || errCode(out) != "stdio_not_allowed" {
			t.Errorf("stdio over HTTP must be refused by default: %d %v", code, out)
		}
		if code, _ := e.do("POST", "/v1/mcp/servers", mcpService, map[string]any{"name": "x", "url": e.up.Endpoint}); code != http.StatusForbidden {
			t.Errorf("service token registering: %d, want 403", code)
		}
		code, out := e.do("GET", "/v1/mcp/servers", mcpAdmin, nil)
		if list, _ := out["servers"].([]any); code != 200 || len(list) != 2 {
			t.Errorf("list: %d %v", code, out)
		}
		code, out = e.do("GET", "/v1/mcp/servers/med/tools?refresh=1&user_id=7", mcpAdmin, nil)
		if tools, _ := out["tools"].([]any); code != 200 || len(tools) < 7 {
			t.Errorf("tools: %d %v", code, out)
		}

		code, out = e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7})
		if added, _ := out["added"].([]any); code != 200 || !slices.Contains(added, any("rb_answer")) {
			t.Fatalf("import: %d %v", code, out)
		}
		// By URL: registers the server, then imports (names now collide).
		code, out = e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"url": e.up.Endpoint, "name": "med2", "auth_config": map[string]any{"type": "bearer", "token": "med_token"}, "credentials": map[string]any{"med_token": "given-0123456789"}})
		if added, _ := out["added"].([]any); code != 200 || !slices.Contains(added, any("med2_rb_answer")) {
			t.Fatalf("import by url: %d %v", code, out)
		}
		if code, out = e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "down"}); code != http.StatusBadGateway {
			t.Errorf("import of an unreachable server: %d %v", code, out)
		}
		if code, _ = e.do("DELETE", "/v1/mcp/servers/med2", mcpAdmin, nil); code != http.StatusNoContent {
			t.Errorf("delete: %d", code)
		}
		// Its plugins are disabled, the other server's stay enabled.
		for name, want := range map[string]string{"med2_rb_answer": "1", "rb_answer": "0"} {
			if code, out = e.do("GET", "/v1/plugins/"+name, mcpAdmin, nil); code != 200 || out["status"] != want {
				t.Errorf("%s after removing med2: %d %v, want status %s", name, code, out["status"], want)
			}
		}
		if code, _ = e.do("DELETE", "/v1/mcp/servers/med2", mcpAdmin, nil); code != http.StatusNotFound {
			t.Errorf("delete again: %d", code)
		}
	})
}

// TestMCPToolsRefreshIsABoolean: ?refresh= is read as the description's
// boolean (review 75 left it compared with "1" and "true", so ?refresh=yes
// or a typo read as false and the cached list came back unnoticed).
func TestMCPToolsRefreshIsABoolean(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	e.register()
	for _, v := range []string{"1", "true", "TRUE", "0", "false"} {
		if code, out := e.do("GET", "/v1/mcp/servers/med/tools?user_id=7&refresh="+v, mcpAdmin, nil); code != http.StatusOK {
			t.Errorf("refresh=%s: %d %v", v, code, out)
		}
	}
	for _, v := range []string{"yes", "on", "2"} {
		code, out := e.do("GET", "/v1/mcp/servers/med/tools?user_id=7&refresh="+v, mcpAdmin, nil)
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code != http.StatusBadRequest || errCode(out) != "malformed_request" || !strings.Contains(msg, "refresh") || !strings.Contains(msg, `"true" nor "false"`) {
			t.Errorf("refresh=%s: %d %v, want 400 naming refresh and what it takes", v, code, out)
		}
	}
}

// TestMCPProxy: seed 004 FR-004 and its error statuses.
func TestMCPProxy(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newMCPEnv(t, st)
		e.register()
		path := "/v1/mcp/proxy/med/tools/generate_disease_treatment_plan/call"
		args := map[string]any{"disease_id": "disease_000001", "patient_age": 45, "severity": "moderate"}

		for _, who := range [][]string{{e.userTok}, {mcpService, "X-User-Id", "7"}, {mcpService, "x-account-id", "7"}} {
			code, out := e.do("POST", path, who[0], args, who[1:]...)
			content, _ := out["content"].([]any)
			if code != 200 || out["isError"] != false || len(content) != 1 {
				t.Fatalf("proxy call as %v: %d %v", who[1:], code, out)
			}
		}
		calls := e.up.Calls()
		last := calls[len(calls)-1]
		if last.Arguments["disease_id"] != "disease_000001" || last.Header.Get("Authorization") != "Bearer "+medSecret {
			t.Errorf("the server got %v %v", last.Arguments, last.Header)
		}

		code, out := e.do("POST", "/v1/mcp/proxy/med/tools/fail/call", e.userTok, map[string]any{"reason": "boom"})
		if code != 200 || out["isError"] != true {
			t.Errorf("tool error: %d %v, want 200 with isError", code, out)
		}
		code, out = e.do("POST", "/v1/mcp/proxy/med/tools/rb.answer/call", e.userTok, map[string]any{"question": "restart?"})
		if code != 200 || out["isError"] != false {
			t.Errorf("rb.answer: %d %v", code, out)
		}

		for _, tc := range []struct {
			path, token, body string
			status            int
			code, mention     string
		}{
			{path, e.userTok, `[1,2]`, 400, "malformed_request", "JSON object"},
			{path, e.userTok, ``, 400, "malformed_request", "JSON object"},
			{path, e.userTok, `{"a":`, 400, "malformed_request", "JSON object"},
			{"/v1/mcp/proxy/bad%20id/tools/x/call", e.userTok, `{}`, 400, "malformed_request", "mcp_id"},
			{"/v1/mcp/proxy/med/tools/bad%20name/call", e.userTok, `{}`, 400, "malformed_request", "tool_name"},
			{"/v1/mcp/proxy/nope/tools/x/call", e.userTok, `{}`, 404, codeMCPServerNotFound, "nope"},
			{"/v1/mcp/proxy/med/tools/no_such_tool/call", e.userTok, `{}`, 404, codeMCPToolNotFound, "no_such_tool"},
			{"/v1/mcp/proxy/down/tools/x/call", e.userTok, `{}`, 502, codeMCPCallFailed, "connection refused"},
			{path + "?user_id=8", mcpService, `{}`, 422, engine.CodeMissingCredentials, "med_token"},
			{path + "?user_id=8", e.userTok, `{}`, 403, "forbidden", "user 7"},
		} {
			code, out := e.do("POST", tc.path, tc.token, tc.body)
			msg, _ := out["error"].(map[string]any)["message"].(string)
			if code != tc.status || errCode(out) != tc.code || !strings.Contains(msg, tc.mention) {
				t.Errorf("POST %s %q: %d %v; want %d %s mentioning %q", tc.path, tc.body, code, out, tc.status, tc.code, tc.mention)
			}
		}
		logs := e.logs.String()
		if !strings.Contains(logs, `"mcp_id":"down"`) || !strings.Contains(logs, "connection refused") {
			t.Errorf("the failed call is not logged with mcp_id and error:\n%s", logs)
		}
		if strings.Contains(logs, medSecret) {
			t.Error("the logs hold a credential")
		}
	})
}

// TestDynamicTools: seed 004 §5.1's shape, and its api_urls work.
func TestDynamicTools(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	e.register()
	ctx := context.Background()
	// Seed 004's plugin: the MCP tool with fixed params; and an HTTP plugin.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"city":"`+r.URL.Query().Get("city")+`","temp":21}`)
	}))
	defer api.Close()
	for _, p := range []*plugins.Plugin{
		{Name: "generate_disease_treatment_plan", Description: "基于疾病ID生成个性化治疗方案",
			Parameters:          json.RawMessage(`{"type":"object","properties":{"disease_id":{"type":"string","description":"疾病编号"},"include_drugs":{"type":"string"},"patient_age":{"type":"integer","description":"患者年龄"}},"required":["disease_id"]}`),
			Execution:           plugins.Execution{Type: plugins.TypeMCP, MCPID: "med", ToolName: "generate_disease_treatment_plan"},
			AuthConfig:          plugins.AuthConfig{Type: plugins.AuthBearer, Token: "med_token"},
			RequiredCredentials: []string{"med_token"},
			FixedParams:         map[string]any{"disease_id": "disease_000001", "include_drugs": "true"}},
		{Name: "weather", Description: "Weather.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`),
			Execution: plugins.Execution{Method: "GET", BaseURL: api.URL}},
	} {
		row, _ := catalog.RowFromPlugin(p)
		if err := e.st.CreatePlugin(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	code, out := e.do("GET", "/v1/tools?format=dynamic", e.userTok, nil)
	if code != 200 {
		t.Fatalf("dynamic tools: %d %v", code, out)
	}
	raw, _ := json.Marshal(out)
	if strings.Contains(strings.ToLower(string(raw)), "authorization") || strings.Contains(string(raw), medSecret) || strings.Contains(string(raw), e.userTok) {
		t.Errorf("the answer hands out a credential: %s", raw)
	}
	if h, _ := out["headers"].(map[string]any); h["x-account-id"] != "7" || h["x-account-type"] != "user" {
		t.Errorf("headers = %v", out["headers"])
	}
	tools, _ := out["_dynamic_tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("_dynamic_tools = %v", tools)
	}
	for _, x := range tools {
		dt := x.(map[string]any)
		params, _ := json.Marshal(dt["parameters"])
		fixed, _ := dt["fixed_params"].(map[string]any)
		api, _ := dt["api_url"].(string)
		var args map[string]any
		switch dt["name"] {
		case "generate_disease_treatment_plan":
			if strings.Contains(string(params), "disease_id") || fixed["disease_id"] != "disease_000001" ||
				api != e.url+"/v1/mcp/proxy/med/tools/generate_disease_treatment_plan/call" ||
				!strings.Contains(string(mustMarshal(dt["original_schema"])), "disease_id") {
				t.Errorf("MCP entry = %v", dt)
			}
			args = map[string]any{"patient_age": 45}
		case "weather":
			if api != e.url+"/v1/tools/weather/call" {
				t.Errorf("HTTP entry = %v", dt)
			}
			args = map[string]any{"city": "Paris"}
		}
		// The caller's loop: LLM arguments merged with fixed_params, POSTed
		// to api_url with its own token.
		for k, v := range fixed {
			args[k] = v
		}
		code, res := e.do("POST", strings.TrimPrefix(api, e.url), e.userTok, args)
		if code != 200 || (res["isError"] != false && res["ok"] != true) {
			t.Errorf("POST %s: %d %v", api, code, res)
		}
	}
	if code, out = e.do("POST", "/v1/tools/nope/call", e.userTok, `{}`); code != http.StatusNotFound {
		t.Errorf("unknown tool: %d %v", code, out)
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestCatalogRoute: /mcp serves the catalog to a per-user token, as the
// go-sdk client sees it.
func TestCatalogRoute(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	e.register()
	if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != 200 {
		t.Fatalf("import: %d %v", code, out)
	}
	hc := &http.Client{Transport: Bearer(e.userTok)}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: hc}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // sessions: their binding is checked below
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "rb_answer", Arguments: map[string]any{"question": "restart?"}})
	if err != nil || res.IsError {
		t.Fatalf("rb_answer over /mcp: %+v, %v", res, err)
	}
	// Without a token, and with the service or admin token naming no user:
	// 401, saying what each kind of token needs.
	for _, tok := range []string{"", mcpService, mcpAdmin} {
		req, _ := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(`{}`))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The body as an SDK shows it raw: "Bearer <token>", not \u003ctoken\u003e.
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "X-User-Id: <user id>") || !strings.Contains(string(body), "per-user token") {
			t.Errorf("/mcp with token %q and no user: %d %s", tok, resp.StatusCode, body)
		}
	}

	// The session is bound to the per-user token that opened it: the
	// service token, even acting for the same user, and another token of
	// that user are refused it.
	other, hash := auth.NewToken()
	if err := e.st.CreateToken(context.Background(), &store.Token{UserID: 7, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tok, user string
		want      int
	}{
		{e.userTok, "", http.StatusOK},
		{other, "", http.StatusForbidden},
		{mcpService, "7", http.StatusForbidden},
	} {
		req, _ := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Authorization", "Bearer "+tc.tok)
		if tc.user != "" {
			req.Header.Set("X-User-Id", tc.user)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("session of the user token presented with %q (user %q): %d, want %d", tc.tok[:8], tc.user, resp.StatusCode, tc.want)
		}
	}

	// The service token naming the user: the user's stored credential applies.
	hc = &http.Client{Transport: headersRT{"Authorization": "Bearer " + mcpService, "X-User-Id": "7"}}
	cs2, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	if res, err := cs2.CallTool(context.Background(), &sdk.CallToolParams{Name: "rb_answer", Arguments: map[string]any{"question": "restart?"}}); err != nil || res.IsError {
		t.Fatalf("rb_answer over /mcp for X-User-Id 7: %+v, %v", res, err)
	}
}

type headersRT map[string]string

func (h headersRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestCatalogWithTypeScriptClient: an MCP client we did not write (the
// official TypeScript SDK, pinned in tests/mcp-ts) lists and calls the
// catalog at /mcp with a per-user token.
func TestCatalogWithTypeScriptClient(t *testing.T) {
	mcpts.Require(t)
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	e.register()
	if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != 200 {
		t.Fatalf("import: %d %v", code, out)
	}
	stdout := mcpts.Run(t, 30*time.Second, nil, "client.mjs", e.url+"/mcp", e.userTok, "generate_disease_treatment_plan",
		`{"disease_id":"disease_000001","patient_age":45}`)
	var got struct {
		Tools []struct {
			Name        string
			InputSchema map[string]any
		}
		Result struct {
			Content []struct{ Type, Text string }
			IsError bool
		}
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("client.mjs printed %s: %v", stdout, err)
	}
	var names []string
	for _, tl := range got.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "rb_answer") || !slices.Contains(names, "generate_disease_treatment_plan") {
		t.Errorf("the TypeScript client lists %v", names)
	}
	if strings.Contains(string(stdout), "mcp_id") || strings.Contains(string(stdout), "med_token") || strings.Contains(string(stdout), medSecret) {
		t.Errorf("the client sees execution or auth: %s", stdout)
	}
	if got.Result.IsError || len(got.Result.Content) == 0 || !strings.Contains(got.Result.Content[0].Text, "treatment_plan") {
		t.Errorf("the TypeScript client's call: %s", stdout)
	}
	calls := e.up.Calls()
	if last := calls[len(calls)-1]; last.Header.Get("Authorization") != "Bearer "+medSecret {
		t.Errorf("upstream got %v, want user 7's credential", last.Header)
	}
}
