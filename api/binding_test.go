package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// storedKey is the value of SECRET_KEY in the store: what an inline plugin
// must not get out in plain text.
const storedKey = "stored-key-0123456789abcdef"

// tenantSearch is the catalog row of TestInlinePluginBinding: a tenant
// fixed by the administrator, a stored secret in a header.
const tenantSearch = `{"name": "tenant_search", "description": "search a tenant",
	"parameters": {"type": "object", "properties": {
		"tenant": {"type": "string"},
		"q": {"type": "string", "description": "what to look for"},
		"page": {"type": "integer"}}, "required": ["q"]},
	"execution": {"method": "GET", "base_url": "UP/v1/{tenant}/search", "param_placement": "query"},
	"auth_config": {"type": "api_key", "mapping": [{"source": "SECRET_KEY", "target": "X-Key"}]},
	"fixed_params": {"tenant": "acme"}}`

// bindingEnv is an engine whose catalog holds tenantSearch aimed at an
// upstream that echoes what it received, SECRET_KEY stored for user 7, and
// a per-user token of user 7.
func bindingEnv(t *testing.T, st *store.Store) (e *env, up *upstream, userToken string, row func(old, new string) json.RawMessage, llm *openaitest.Server) {
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"uri": r.RequestURI, "key": r.Header.Get("X-Key")})
	})
	llm = openaitest.New(t)
	e = newEnv(t, st, withModel(llm))
	doc := strings.ReplaceAll(tenantSearch, "UP", up.URL)
	if code, body := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
		t.Fatalf("add plugin: %d %v", code, body)
	}
	if code, body := e.do("PUT", "/v1/credentials/7/SECRET_KEY", adminToken, map[string]string{"value": storedKey}); code != http.StatusNoContent {
		t.Fatalf("store: %d %v", code, body)
	}
	code, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "laptop"})
	if code != http.StatusCreated {
		t.Fatalf("create token: %d %v", code, tok)
	}
	row = func(old, new string) json.RawMessage {
		t.Helper()
		if !strings.Contains(doc, old) {
			t.Fatalf("the row lacks %s", old)
		}
		return json.RawMessage(strings.Replace(doc, old, new, 1))
	}
	return e, up, tok["token"].(string), row, llm
}

// TestInlinePluginBinding (issue 29, point 1): for the per-user and the
// service token, an inline plugin whose call would take a stored
// credential is the enabled catalog plugin of its name or is refused
// (credential_not_bound, naming the rule, the key and the first field that
// differs, never a value), nothing sent; RuoYi's re-serialised copy is the
// row (its fixed params, its parameters); payload credentials and the
// administrator are not bound.
func TestInlinePluginBinding(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e, up, userToken, row, llm := bindingEnv(t, st)
		// RuoYi's copy: the columns serialised again in another key order,
		// another description, the optional page left out.
		ruoyi := json.RawMessage(strings.NewReplacer("UP", up.URL).Replace(`{"fixed_params":{"tenant":"acme"},"required_credentials":["SECRET_KEY"],
			"auth_config":{"mapping":[{"target":"X-Key","location":"header","source":"SECRET_KEY"}],"type":"api_key"},
			"execution":{"param_placement":"query","base_url":"UP/v1/{tenant}/search","method":"get"},
			"parameters":{"required":["q"],"properties":{"q":{"type":"string"},"tenant":{"type":"string"}},"type":"object"},
			"description":"搜索","name":"tenant_search"}`))
		refused := []struct {
			name   string
			plugin json.RawMessage
			args   map[string]any
			field  string
		}{
			{"extra arguments admitted, admin=1", row(`"required": ["q"]`, `"required": ["q"], "additionalProperties": true`),
				map[string]any{"q": "x", "admin": 1}, "parameters.additionalProperties"},
			{"a changed base_url path", row("/v1/{tenant}/search", "/v1/{tenant}/admin"), map[string]any{"q": "x"}, "execution.base_url"},
			{"another origin", row(up.URL, "http://127.0.0.2:1"), map[string]any{"q": "x"}, "execution.base_url"},
			{"the key marked no secret", row(`"target": "X-Key"`, `"target": "X-Key", "secret": false`), map[string]any{"q": "x"}, "auth_config.mapping[0].secret"},
			{"another tenant fixed", row(`"tenant": "acme"`, `"tenant": "globex"`), map[string]any{"q": "x"}, "fixed_params.tenant"},
			{"a name the catalog lacks", row(`"name": "tenant_search"`, `"name": "tenant_admin"`), map[string]any{"q": "x"}, ""},
		}
		for _, tok := range []struct{ name, token string }{{"per-user token", userToken}, {"service token", serviceToken}} {
			for _, tt := range refused {
				t.Run(tok.name+": "+tt.name, func(t *testing.T) {
					code, body := e.do("POST", "/v1/execute", tok.token, map[string]any{"plugin": tt.plugin, "arguments": tt.args, "user_id": 7})
					msg := errMessage(body)
					errObj, _ := body["error"].(map[string]any)
					details, _ := errObj["details"].(map[string]any)
					if code != http.StatusUnprocessableEntity || errCode(body) != engine.CodeCredentialNotBound || details["key"] != "SECRET_KEY" || details["field"] != tt.field {
						t.Fatalf("%d %v", code, body)
					}
					if !strings.Contains(msg, "catalog") || !strings.Contains(msg, "SECRET_KEY") || !strings.Contains(msg, tt.field) ||
						strings.Contains(msg, storedKey) || strings.Contains(msg, "globex") {
						t.Errorf("the refusal names the rule, the key and the field, never a value: %q", msg)
					}
				})
			}
		}
		t.Run("a run's step refused", func(t *testing.T) {
			llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "tenant_search", Arguments: `{"q":"x","admin":1}`}}}, openaitest.Turn{Content: "done"})
			code, reply := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": 7, "messages": []map[string]string{{"role": "user", "content": "q"}},
				"plugins": []json.RawMessage{refused[0].plugin}})
			steps, _ := reply["steps"].([]any)
			if code != http.StatusOK || len(steps) != 1 {
				t.Fatalf("run: %d %v", code, reply)
			}
			if st := steps[0].(map[string]any); st["status"] != "refused" || !strings.Contains(st["error"].(string), engine.CodeCredentialNotBound) {
				t.Fatalf("step: %v", st)
			}
		})
		if got := up.received(); len(got) != 0 {
			t.Fatalf("refused calls reached the upstream: %v", got)
		}

		sent := []struct {
			name, token string
			body        map[string]any
			uri, key    string
		}{
			{"RuoYi's copy is the row: its fixed tenant", serviceToken, map[string]any{"plugin": ruoyi, "arguments": map[string]any{"q": "x", "tenant": "globex"}, "user_id": 7},
				"/v1/acme/search?q=x", storedKey},
			{"RuoYi's copy, per-user token, the row's optional page", userToken, map[string]any{"plugin": ruoyi, "arguments": map[string]any{"q": "x", "page": 2}},
				"/v1/acme/search?page=2&q=x", storedKey},
			{"payload credentials are the caller's own", userToken, map[string]any{"plugin": row("/v1/{tenant}/search", "/v1/{tenant}/admin"),
				"arguments": map[string]any{"q": "x"}, "credentials": map[string]string{"SECRET_KEY": "callers-own-key"}}, "/v1/acme/admin?q=x", "callers-own-key"},
			{"the administrator defines the catalog", adminToken, map[string]any{"plugin": row("/v1/{tenant}/search", "/v1/{tenant}/admin"),
				"arguments": map[string]any{"q": "x"}, "user_id": 7}, "/v1/acme/admin?q=x", storedKey},
		}
		for _, tt := range sent {
			t.Run(tt.name, func(t *testing.T) {
				before := len(up.received())
				if code, body := e.do("POST", "/v1/execute", tt.token, tt.body); code != http.StatusOK || body["ok"] != true {
					t.Fatalf("%d %v", code, body)
				}
				got := up.received()
				if len(got) != before+1 || got[before].uri != tt.uri || got[before].header.Get("X-Key") != tt.key {
					t.Fatalf("upstream received %v, want %s", got[before:], tt.uri)
				}
			})
		}
		t.Run("the copy's arguments are checked against the row", func(t *testing.T) {
			code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"plugin": ruoyi, "arguments": map[string]any{"q": "x", "admin": 1}, "user_id": 7})
			if code != http.StatusUnprocessableEntity || errCode(body) != engine.CodeInvalidArguments || !strings.Contains(errMessage(body), "admin") {
				t.Fatalf("%d %v", code, body)
			}
		})
	})
}

// TestPayloadFixedParamsRule (issue 29, point 3): the catalog's fixed
// params win; a payload's may only fill a declared parameter the catalog
// left open, and only from the service token.
func TestPayloadFixedParamsRule(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e, up, userToken, _, llm := bindingEnv(t, st)
		messages := []map[string]string{{"role": "user", "content": "q"}}
		refused := []struct {
			name, route, token string
			body               map[string]any
			field              string
		}{
			{"per-user token, execute", "/v1/execute", userToken, map[string]any{"name": "tenant_search", "arguments": map[string]any{"q": "x"},
				"fixed_params": map[string]any{"page": 2}}, "fixed_params"},
			{"per-user token, run", "/v1/runs", userToken, map[string]any{"messages": messages, "plugin_names": []string{"tenant_search"},
				"fixed_params": map[string]any{"tenant_search": map[string]any{"page": 2}}}, "fixed_params"},
			{"the catalog's tenant rewritten", "/v1/execute", serviceToken, map[string]any{"name": "tenant_search", "arguments": map[string]any{"q": "x"}, "user_id": 7,
				"fixed_params": map[string]any{"tenant": "globex"}}, "fixed_params.tenant"},
			{"an undeclared parameter", "/v1/execute", serviceToken, map[string]any{"name": "tenant_search", "arguments": map[string]any{"q": "x"}, "user_id": 7,
				"fixed_params": map[string]any{"admin": 1}}, "fixed_params.admin"},
		}
		for _, tt := range refused {
			t.Run(tt.name, func(t *testing.T) {
				code, body := e.do("POST", tt.route, tt.token, tt.body)
				if code != http.StatusUnprocessableEntity || errCode(body) != engine.CodeFixedParamsNotAllowed || !strings.Contains(errMessage(body), tt.field+": not allowed") {
					t.Fatalf("%d %v", code, body)
				}
			})
		}
		t.Run("a run's call rewriting the catalog's tenant", func(t *testing.T) {
			llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "tenant_search", Arguments: `{"q":"x"}`}}}, openaitest.Turn{Content: "done"})
			code, reply := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": 7, "messages": messages, "plugin_names": []string{"tenant_search"},
				"fixed_params": map[string]any{"tenant_search": map[string]any{"tenant": "globex"}}})
			steps, _ := reply["steps"].([]any)
			if code != http.StatusOK || len(steps) != 1 || steps[0].(map[string]any)["status"] != "refused" ||
				!strings.Contains(steps[0].(map[string]any)["error"].(string), engine.CodeFixedParamsNotAllowed) {
				t.Fatalf("run: %d %v", code, reply)
			}
		})
		if got := up.received(); len(got) != 0 {
			t.Fatalf("refused calls reached the upstream: %v", got)
		}
		t.Run("the service token fills an open parameter", func(t *testing.T) {
			code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "tenant_search", "arguments": map[string]any{"q": "x", "tenant": "globex"},
				"user_id": 7, "fixed_params": map[string]any{"page": 2}})
			if got := up.received(); code != http.StatusOK || len(got) != 1 || got[0].uri != "/v1/acme/search?page=2&q=x" {
				t.Fatalf("%d %v %v", code, body, got)
			}
		})
	})
}

// TestMaskingClassesFromCatalog (issue 29, point 2): a stored key is an
// identifier only when every enabled catalog plugin reading it reads it as
// one. SECRET_KEY is read as a secret by one catalog plugin and as an
// identifier by three others (a mapping marked "secret": false, a basic
// username, an oauth2 client id): the echo of its value is masked through
// each of those, for both tokens, in /v1/execute, a run's reply to the
// model and its stored run, and the execution records. Disabled, the
// secret reader stops counting; a payload credential keeps the caller's
// classification; a short value read as a secret is refused.
func TestMaskingClassesFromCatalog(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/token":
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"access_token":"access-token-0123456789","token_type":"bearer","expires_in":3600}`)
			case "/badtoken":
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, `{"error":"invalid_client","error_description":"unknown client %s"}`, storedKey)
			case "/mcp": // an MCP server refusing to open a session, quoting the tenant header
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"unknown tenant %s"}}`, r.Header.Get("X-Tenant"))
			default: // an upstream that knows the value and says it
				fmt.Fprintf(w, `{"echo":%q}`, storedKey)
			}
		})
		// An MCP server whose tool reports an error quoting the value: the
		// message is the execution record's.
		mcpUp := mcptest.New(t)
		mcpUp.AddTool("leak", "reports an error", `{"type":"object"}`, func(context.Context, map[string]any) *sdk.CallToolResult {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "bad tenant " + storedKey}}}
		})
		llm := openaitest.New(t)
		e := newEnv(t, st, withModel(llm), func(s *api.Server) {
			m := enginemcp.NewManager(st, egresstest.Client(t))
			m.Identifiers, m.Logger = s.Executor.Catalog.Identifiers, s.Logger
			t.Cleanup(func() { m.Close() })
			enginemcp.Invoker{Manager: m}.RegisterOn(s.Executor)
			s.MCP = &api.MCPConfig{Manager: m}
		})
		// The refusing server is at the origin the catalog sends SECRET_KEY
		// to (up's): elsewhere, the key would not be sent at all (hosts76).
		if code, body := e.do("POST", "/v1/mcp/servers", adminToken, map[string]any{"mcp_id": "broken", "name": "broken", "url": up.URL + "/mcp",
			"auth_config": map[string]any{"type": "api_key", "mapping": []map[string]any{{"source": "SECRET_KEY", "target": "X-Tenant", "secret": false}}}}); code != http.StatusCreated {
			t.Fatalf("register broken: %d %v", code, body)
		}
		// Two registrations of it, reading SECRET_KEY as identifiers.
		mcpSlots := map[string]map[string]any{
			"mcp_mapping": {"type": "api_key", "mapping": []map[string]any{{"source": "SECRET_KEY", "target": "X-Tenant", "secret": false}}},
			"mcp_basic":   {"type": "basic", "username": "SECRET_KEY", "password": "PASS_KEY"},
		}
		for name, cfg := range mcpSlots {
			if code, body := e.do("POST", "/v1/mcp/servers", adminToken, map[string]any{"mcp_id": name, "name": name, "url": mcpUp.Endpoint, "auth_config": cfg}); code != http.StatusCreated {
				t.Fatalf("register %s: %d %v", name, code, body)
			}
			doc := fmt.Sprintf(`{"name": "rec_%s", "description": "d", "parameters": {"type": "object"}, "required_credentials": ["SECRET_KEY"],
				"execution": {"type": "mcp", "mcp_id": %q, "tool_name": "leak"}}`, name, name)
			if name == "mcp_basic" {
				doc = strings.Replace(doc, `["SECRET_KEY"]`, `["SECRET_KEY", "PASS_KEY"]`, 1)
			}
			if code, body := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
				t.Fatalf("add plugin: %d %v", code, body)
			}
		}
		plugin := func(name, base, authCfg string) string {
			return fmt.Sprintf(`{"name": %q, "description": "d", "parameters": {"type": "object", "properties": {}},
				"execution": {"method": "GET", "base_url": %q}, "auth_config": %s}`, name, base, authCfg)
		}
		slots := map[string]string{
			"slot_mapping": `{"type": "api_key", "mapping": [{"source": "SECRET_KEY", "target": "X-Tenant", "secret": false}]}`,
			"slot_basic":   `{"type": "basic", "username": "SECRET_KEY", "password": "PASS_KEY"}`,
			"slot_oauth":   `{"type": "oauth2", "oauth2": {"token_url": "` + up.URL + `/token", "client_id": "SECRET_KEY", "client_secret": "CS_KEY"}}`,
		}
		docs := []string{plugin("keyed", up.URL+"/keyed", `{"type": "api_key", "mapping": [{"source": "SECRET_KEY", "target": "X-Key"}]}`),
			plugin("rec_oauth", up.URL+"/x", `{"type": "oauth2", "oauth2": {"token_url": "`+up.URL+`/badtoken", "client_id": "SECRET_KEY", "client_secret": "CS_KEY"}}`)}
		for name, cfg := range slots {
			docs = append(docs, plugin(name, up.URL+"/echo", cfg))
		}
		for _, doc := range docs {
			if code, body := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
				t.Fatalf("add plugin: %d %v", code, body)
			}
		}
		for k, v := range map[string]string{"SECRET_KEY": storedKey, "PASS_KEY": "pass-0123456789", "CS_KEY": "client-secret-0123456789"} {
			if code, body := e.do("PUT", "/v1/credentials/7/"+k, adminToken, map[string]string{"value": v}); code != http.StatusNoContent {
				t.Fatalf("store %s: %d %v", k, code, body)
			}
		}
		code, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "laptop"})
		if code != http.StatusCreated {
			t.Fatalf("create token: %d %v", code, tok)
		}
		tokens := []struct{ name, token string }{{"service token", serviceToken}, {"per-user token", tok["token"].(string)}}
		masked := func(t *testing.T, what string, v any) {
			t.Helper()
			b, _ := json.Marshal(v)
			if strings.Contains(string(b), storedKey) || !strings.Contains(string(b), auth.Redacted) {
				t.Errorf("%s: the stored secret shows, or no echo was masked: %s", what, b)
			}
		}

		for _, tk := range tokens {
			for name := range slots {
				t.Run("execute "+name+", "+tk.name, func(t *testing.T) {
					code, body := e.do("POST", "/v1/execute", tk.token, map[string]any{"name": name, "user_id": 7})
					if code != http.StatusOK || body["ok"] != true {
						t.Fatalf("%d %v", code, body)
					}
					masked(t, "output", body["output"])
				})
			}
			t.Run("tools/{name}/call, "+tk.name, func(t *testing.T) {
				code, body := api.DoJSON(t, e.url, "POST", "/v1/tools/slot_basic/call", tk.token, map[string]any{}, "X-User-Id", "7")
				if code != http.StatusOK || body["ok"] != true {
					t.Fatalf("%d %v", code, body)
				}
				masked(t, "output", body["output"])
			})
			t.Run("run and stored run, "+tk.name, func(t *testing.T) {
				var calls []openaitest.ToolCall
				var names []string
				for name := range slots {
					calls = append(calls, openaitest.ToolCall{Name: name, Arguments: `{}`})
					names = append(names, name)
				}
				llm.Script(openaitest.Turn{ToolCalls: calls}, openaitest.Turn{Content: "done"})
				code, reply := e.do("POST", "/v1/runs", tk.token, map[string]any{"user_id": 7, "messages": []map[string]string{{"role": "user", "content": "q"}},
					"plugin_names": names})
				if code != http.StatusOK || reply["status"] != "completed" {
					t.Fatalf("run: %d %v", code, reply)
				}
				masked(t, "the run's reply", reply["messages"])
				reqs := llm.Requests()
				masked(t, "what the model was sent", string(reqs[len(reqs)-1]))
				code, stored := e.do("GET", "/v1/runs/"+reply["run_id"].(string), tk.token, nil)
				if code != http.StatusOK {
					t.Fatalf("stored run: %d %v", code, stored)
				}
				masked(t, "the stored run", stored["messages"])
			})
		}
		t.Run("the catalog over /mcp", func(t *testing.T) {
			hc := &http.Client{Transport: api.Bearer(tokens[1].token)}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
				Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: hc}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			for name := range slots {
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("%s over /mcp: %+v, %v", name, res, err)
				}
				masked(t, name+" over /mcp", res.Content)
			}
		})
		t.Run("the MCP proxy's error and log", func(t *testing.T) {
			code, body := e.do("POST", "/v1/mcp/proxy/broken/tools/x/call", tokens[1].token, map[string]any{})
			if code != http.StatusBadGateway || !strings.Contains(errMessage(body), "unknown tenant") {
				t.Fatalf("%d %v", code, body)
			}
			masked(t, "the proxy's error", body)
			if logs := e.logs.String(); strings.Contains(logs, storedKey) || !strings.Contains(logs, "unknown tenant "+auth.Redacted) {
				t.Errorf("the log shows the value, or not the masked failure:\n%s", logs)
			}
		})
		t.Run("payload credentials keep the caller's classification", func(t *testing.T) {
			code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "slot_mapping", "credentials": map[string]string{"SECRET_KEY": storedKey}})
			if code != http.StatusOK || !strings.Contains(string(mustJSON(t, body["output"])), storedKey) {
				t.Fatalf("the caller's own identifier is data: %d %v", code, body)
			}
		})
		t.Run("once the secret reader is disabled, an identifier", func(t *testing.T) {
			if code, _ := e.do("PATCH", "/v1/plugins/keyed", adminToken, map[string]string{"status": "1"}); code != http.StatusOK {
				t.Fatal("disable")
			}
			code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "slot_mapping", "user_id": 7})
			if code != http.StatusOK || !strings.Contains(string(mustJSON(t, body["output"])), storedKey) {
				t.Fatalf("read only as an identifier, it is data: %d %v", code, body)
			}
		})
		t.Run("a short value becoming a secret is refused", func(t *testing.T) {
			if err := rawSet(t, e, 8, "SECRET_KEY", "acm"); err != nil {
				t.Fatal(err)
			}
			if code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "slot_mapping", "user_id": 8}); code != http.StatusOK {
				t.Fatalf("a short identifier: %d %v", code, body)
			}
			if code, _ := e.do("PATCH", "/v1/plugins/keyed", adminToken, map[string]string{"status": "0"}); code != http.StatusOK {
				t.Fatal("enable")
			}
			code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "slot_mapping", "user_id": 8})
			if code != http.StatusUnprocessableEntity || errCode(body) != engine.CodeAuthError || !strings.Contains(errMessage(body), "credential SECRET_KEY") {
				t.Fatalf("a short secret: %d %v", code, body)
			}
		})
		recorded := []string{"rec_oauth", "rec_mcp_mapping", "rec_mcp_basic"}
		t.Run("execution records", func(t *testing.T) {
			// The token endpoint's error quoting the client id, and the MCP
			// tools' quoting the tenant and the username, are the records'
			// messages.
			for _, name := range recorded {
				if code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": name, "user_id": 7}); code != http.StatusOK || body["ok"] != false {
					t.Fatalf("%s: %d %v", name, code, body)
				}
			}
			if err := e.rec.Close(t.Context()); err != nil { // flushed: the last subtest
				t.Fatal(err)
			}
			for _, tk := range tokens {
				code, body := e.do("GET", "/v1/executions?user_id=7", tk.token, nil)
				if code != http.StatusOK {
					t.Fatalf("executions: %d %v", code, body)
				}
				for _, name := range recorded {
					found := false
					for _, r := range body["executions"].([]any) {
						if rec := r.(map[string]any); rec["plugin_name"] == name {
							found = true
							masked(t, name+" record", rec)
						}
					}
					if !found {
						t.Errorf("no record of %s: %v", name, body)
					}
				}
			}
		})

	})
}
