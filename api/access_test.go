package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/egress/egresstest"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
)

// ruoyiEnv is an engine over RuoYi-Vue's own tables (its database script,
// unmodified) with BLINDEXEC_PERMISSIONS=ruoyi, where role 2 ("common",
// user 2 "ry") has lost the menu granting system:role:list, and four
// plugins on a loopback upstream: list_users (system:user:list, which
// common holds), list_roles (system:role:list), leave (hr:leave:list, a
// string no RuoYi menu grants) and weather (no perms). tokens are
// per-user tokens of users 1 and 2.
type ruoyiEnv struct {
	*env
	up     *upstream
	tokens map[int64]string
}

func newRuoYiEnv(t *testing.T, mode access.Mode, opts ...func(*api.Server)) *ruoyiEnv {
	st := testdb.Script(t, "../access/testdata/ruoyi-vue/ry_20260417.sql")
	if _, err := st.DB().Exec("delete from sys_role_menu where role_id = 2 and menu_id = 101"); err != nil {
		t.Fatal(err)
	}
	checker, err := access.New(st.DB(), access.Settings{Mode: mode, Source: access.SourceRuoYi, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	e := newEnv(t, st, func(s *api.Server) {
		s.Executor.Access, s.Access = checker, checker
		m := enginemcp.NewManager(st, egresstest.Client(t))
		t.Cleanup(func() { m.Close() })
		s.MCP = &api.MCPConfig{Manager: m}
		for _, o := range opts {
			o(s)
		}
	})
	for name, perms := range map[string]string{"list_users": `["system:user:list"]`, "list_roles": `["system:role:list"]`,
		"leave": `["hr:leave:list"]`, "weather": `[]`} {
		doc := fmt.Sprintf(`{"name":%q,"description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
		  "execution":{"method":"GET","base_url":"%s/%s"},"perms":%s}`, name, up.URL, name, perms)
		if code, out := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
			t.Fatalf("add %s: %d %v", name, code, out)
		}
	}
	tokens := map[int64]string{}
	for _, user := range []int64{1, 2} {
		tok, _, err := api.IssueToken(context.Background(), st, user, "ruoyi", 0, "")
		if err != nil {
			t.Fatal(err)
		}
		tokens[user] = tok
	}
	return &ruoyiEnv{env: e, up: up, tokens: tokens}
}

// ruoyiGrants is what RuoYi's tables grant each user in ruoyiEnv.
var ruoyiGrants = map[int64]map[string]bool{
	1: {"list_users": true, "list_roles": true, "leave": true, "weather": true},
	2: {"list_users": true, "weather": true},
}

// TestAccessCallsRuoYi: user 1 calls every tool; user 2, of the common
// role, calls exactly those its menus grant and is refused the others
// (403 permission_denied, naming the plugin and what it needs, nothing
// sent) over /v1/execute — with its own token and with the service's
// acting for it — and /v1/tools/{name}/call.
func TestAccessCallsRuoYi(t *testing.T) {
	e := newRuoYiEnv(t, access.ModeOpen)
	for user, grants := range ruoyiGrants {
		for _, tool := range []string{"list_users", "list_roles", "leave", "weather"} {
			for _, route := range []struct {
				name, path, token string
				body              any
			}{
				{"execute, per-user token", "/v1/execute", e.tokens[user], map[string]any{"name": tool, "arguments": map[string]any{"q": "x"}}},
				{"execute, service token", "/v1/execute", serviceToken, map[string]any{"name": tool, "user_id": fmt.Sprint(user), "arguments": map[string]any{"q": "x"}}},
				{"tools call", "/v1/tools/" + tool + "/call", e.tokens[user], map[string]any{"q": "x"}},
			} {
				t.Run(fmt.Sprintf("user %d %s %s", user, tool, route.name), func(t *testing.T) {
					before := len(e.up.received())
					code, out := e.do("POST", route.path, route.token, route.body)
					sent := len(e.up.received()) > before
					if grants[tool] {
						if code != http.StatusOK || !sent {
							t.Fatalf("%d %v, sent %v", code, out, sent)
						}
						return
					}
					errBody, _ := out["error"].(map[string]any)
					details, _ := errBody["details"].(map[string]any)
					if code != http.StatusForbidden || errBody["code"] != "permission_denied" || details["plugin"] != tool || sent {
						t.Fatalf("%d %v, sent %v", code, out, sent)
					}
				})
			}
			// An inline copy named like the row, reading a stored key, that
			// differs from it: binding refuses it naming the field — for a
			// row the user may not use, an oracle of the row's execution,
			// fixed params and parameters; the access rule answers first.
			t.Run(fmt.Sprintf("user %d %s inline probe", user, tool), func(t *testing.T) {
				probe := fmt.Sprintf(`{"name":%q,"description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
				  "execution":{"method":"GET","base_url":"%s/guess"},"auth_config":{"type":"bearer","token":"TOKEN"}}`, tool, e.up.URL)
				before := len(e.up.received())
				code, out := e.do("POST", "/v1/execute", e.tokens[user], map[string]any{"plugin": json.RawMessage(probe), "arguments": map[string]any{"q": "x"}})
				errBody, _ := out["error"].(map[string]any)
				details, _ := errBody["details"].(map[string]any)
				want, status := "permission_denied", http.StatusForbidden
				if grants[tool] {
					want, status = "credential_not_bound", http.StatusUnprocessableEntity
				}
				if code != status || errBody["code"] != want || len(e.up.received()) > before {
					t.Fatalf("%d %v", code, out)
				}
				if !grants[tool] && (details["field"] != nil || strings.Contains(fmt.Sprint(errBody["message"]), "execution")) {
					t.Fatalf("the refusal describes the row: %v", out)
				}
			})
		}
	}
}

// TestAccessNarrowed: a service payload's user.permissions and a per-user
// token's fixed perms narrow what RuoYi's tables grant, never widen it;
// a per-user caller cannot name its permissions, and a payload's user
// must be its user_id (400 invalid_payload naming the field).
func TestAccessNarrowed(t *testing.T) {
	e := newRuoYiEnv(t, access.ModeOpen)
	token := func(user int64, perms ...string) string {
		code, out := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": user, "perms": perms})
		if code != http.StatusCreated {
			t.Fatalf("token: %d %v", code, out)
		}
		return out["token"].(string)
	}
	narrowTok, widenTok := token(1, "system:role:list"), token(2, "*:*:*")
	call := func(tool string, user any, extra map[string]any) map[string]any {
		body := map[string]any{"name": tool, "arguments": map[string]any{"q": "x"}}
		if user != nil {
			body["user_id"] = user
		}
		for k, v := range extra {
			body[k] = v
		}
		return body
	}
	payloadUser := func(id any, perms ...string) map[string]any {
		return map[string]any{"user": map[string]any{"id": id, "permissions": append([]string{}, perms...)}}
	}
	tests := []struct {
		name, token string
		body        map[string]any
		code        int
		want        string // an error's code, or its field for invalid_payload
		msg         string // what the error's message says, when it matters
	}{
		{"a payload's perms narrow user 1", serviceToken, call("list_users", 1, payloadUser(1, "system:role:list")), 403, "permission_denied", ""},
		{"a payload's perms granting it", serviceToken, call("list_roles", 1, payloadUser(1, "system:role:list")), 200, "", ""},
		{"a payload's *:*:* never widens user 2", serviceToken, call("list_roles", 2, payloadUser(2, "*:*:*")), 403, "permission_denied", ""},
		{"a payload's empty perms hold nothing", serviceToken, call("list_users", 1, payloadUser(1)), 403, "permission_denied", ""},
		{"a plugin without perms under open needs none", serviceToken, call("weather", 1, payloadUser(1)), 200, "", ""},
		{"the administrator's payload too", adminToken, call("list_users", 1, payloadUser(1, "system:role:list")), 403, "permission_denied", ""},
		{"user.id must be user_id", serviceToken, call("list_roles", 1, payloadUser(2, "system:role:list")), 400, "user.id", "user.id: 2, user_id 1: they must be the same user"},
		// A newcomer sent user without user_id: "must equal user_id" named no user_id it had sent.
		{"user without user_id", serviceToken, call("list_roles", nil, payloadUser(2, "system:role:list")), 400, "user.id", "user.id: 2, and user_id is absent: send user_id too, the same id"},
		{"user.permissions required", serviceToken, call("list_roles", 1, map[string]any{"user": map[string]any{"id": 1}}), 400, "user.permissions", ""},
		{"a per-user token cannot name its permissions", e.tokens[2], call("list_roles", nil, payloadUser(2, "system:role:list")), 400, "user.permissions", ""},
		{"a token's fixed perms narrow user 1", narrowTok, call("list_users", nil, nil), 403, "permission_denied", ""},
		{"a token's fixed perms granting it", narrowTok, call("list_roles", nil, nil), 200, "", ""},
		{"a token's *:*:* never widens user 2", widenTok, call("list_roles", nil, nil), 403, "permission_denied", ""},
		{"a token's fixed perms over tools call", narrowTok, nil, 403, "permission_denied", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.up.received())
			path, body := "/v1/execute", any(tt.body)
			if tt.body == nil {
				path, body = "/v1/tools/list_users/call", map[string]any{"q": "x"}
			}
			code, out := e.do("POST", path, tt.token, body)
			errBody, _ := out["error"].(map[string]any)
			got, _ := errBody["code"].(string)
			if got == "invalid_payload" {
				d, _ := errBody["details"].(map[string]any)
				got, _ = d["field"].(string)
			}
			if code != tt.code || got != tt.want {
				t.Fatalf("%d %v, want %d %s", code, out, tt.code, tt.want)
			}
			if msg, _ := errBody["message"].(string); msg != tt.msg && tt.msg != "" {
				t.Errorf("message %q, want %q", msg, tt.msg)
			}
			if sent := len(e.up.received()) > before; sent != (code == 200) {
				t.Errorf("sent %v", sent)
			}
		})
	}
	for _, perms := range []any{[]string{}, []string{"system:user:*"}, []string{"not a perm"}} {
		if code, out := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 1, "perms": perms}); code != 400 || errCodeOf(out) != "invalid_payload" {
			t.Errorf("token perms %v: %d %v", perms, code, out)
		}
	}
}

func errCodeOf(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// TestAccessRunNarrowed: a service payload's permissions narrow a run
// over RuoYi's tables: the model naming a tool they do not grant gets a
// tool error, nothing is sent, and the tool they grant is called.
func TestAccessRunNarrowed(t *testing.T) {
	llm := openaitest.New(t)
	e := newRuoYiEnv(t, access.ModeOpen, withModel(llm))
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "list_users", Arguments: `{"q":"x"}`}, {Name: "list_roles", Arguments: `{"q":"x"}`}}},
		openaitest.Turn{Content: "done"},
	)
	code, reply := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": 1, "plugin_names": []string{"list_users", "list_roles"},
		"messages": []map[string]any{{"role": "user", "content": "users and roles"}},
		"user":     map[string]any{"id": 1, "permissions": []string{"system:role:list"}}})
	if code != http.StatusOK || reply["status"] != "completed" {
		t.Fatalf("run: %d %v", code, reply)
	}
	got := e.up.received()
	if len(got) != 1 || got[0].uri != "/list_roles?q=x" {
		t.Fatalf("upstream received %v", got)
	}
	steps, _ := reply["steps"].([]any)
	if len(steps) != 2 || steps[0].(map[string]any)["status"] == "ok" || steps[1].(map[string]any)["status"] != "ok" {
		t.Fatalf("steps %v", steps)
	}
}

// TestAccessListsRuoYi: a tool a user may not use is absent, not merely
// refused: user 1 lists every tool and user 2, of the common role,
// exactly those its menus grant, in /v1/tools (OpenAI and dynamic
// formats), /v1/tools/search and tools/list over /mcp, where a call of
// another is a tool error and nothing is sent.
func TestAccessListsRuoYi(t *testing.T) {
	e := newRuoYiEnv(t, access.ModeOpen)
	for user, grants := range ruoyiGrants {
		want := slices.Sorted(maps.Keys(grants))
		t.Run(fmt.Sprint("user ", user), func(t *testing.T) {
			tok := e.tokens[user]
			names := listedNames
			_, list := e.do("GET", "/v1/tools", tok, nil)
			tools, _ := list["tools"].([]any)
			if got := names(tools, "function"); !slices.Equal(got, want) || list["total"] != float64(len(want)) {
				t.Errorf("/v1/tools: %v (total %v), want %v", got, list["total"], want)
			}
			_, dyn := e.do("GET", "/v1/tools?format=dynamic", tok, nil)
			dynTools, _ := dyn["_dynamic_tools"].([]any)
			if got := names(dynTools); !slices.Equal(got, want) {
				t.Errorf("_dynamic_tools: %v, want %v", got, want)
			}
			for _, tool := range []string{"leave", "list_roles", "weather"} {
				_, found := e.do("GET", "/v1/tools/search?q="+tool, tok, nil)
				results, _ := found["results"].([]any)
				got := names(results)
				if slices.Contains(got, tool) != grants[tool] || found["total"] != float64(len(got)) {
					t.Errorf("/v1/tools/search?q=%s: %v (total %v)", tool, got, found["total"])
				}
				for _, name := range got {
					if !grants[name] {
						t.Errorf("/v1/tools/search?q=%s found %s", tool, name)
					}
				}
			}
			for _, era := range []string{"2026-07-28", "2025-11-25"} { // without a session, in one
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
					Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(tok)}},
						&sdk.ClientSessionOptions{ProtocolVersion: era})
				if err != nil {
					t.Fatal(err)
				}
				listed, err := cs.ListTools(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, tool := range listed.Tools {
					got = append(got, tool.Name)
				}
				if slices.Sort(got); !slices.Equal(got, want) {
					t.Errorf("tools/list over /mcp (%s): %v, want %v", era, got, want)
				}
				for _, tool := range []string{"list_users", "list_roles", "leave", "weather"} {
					before := len(e.up.received())
					res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"q": "x"}})
					if err != nil {
						t.Fatalf("%s over /mcp (%s): %v", tool, era, err)
					}
					sent := len(e.up.received()) > before
					if res.IsError == grants[tool] || sent != grants[tool] {
						t.Errorf("%s over /mcp (%s): error %v, sent %v", tool, era, res.IsError, sent)
					}
				}
				cs.Close()
			}
		})
	}
}

// TestAccessSearchFollowsCatalog (issue 46 point 6): a user's search
// answers from the set of its usable tools kept per user, which a
// catalog change replaces: perms the user holds, given to a tool, make
// it found by the next search, and perms it lacks make it gone.
func TestAccessSearchFollowsCatalog(t *testing.T) {
	e := newRuoYiEnv(t, access.ModeOpen)
	found := func(q string) []string {
		t.Helper()
		code, out := e.do("GET", "/v1/tools/search?q="+q, e.tokens[2], nil)
		if code != http.StatusOK {
			t.Fatalf("search %s: %d %v", q, code, out)
		}
		results, _ := out["results"].([]any)
		return listedNames(results)
	}
	setPerms := func(name, perm string) {
		t.Helper()
		if code, out := e.do("POST", "/v1/plugins/perms", adminToken, map[string]any{"names": []string{name}, "perms": []string{perm}}); code != http.StatusOK {
			t.Fatalf("perms of %s: %d %v", name, code, out)
		}
	}
	if got := found("roles"); slices.Contains(got, "list_roles") || !slices.Contains(found("users"), "list_users") {
		t.Fatalf("before: roles finds %v", got)
	}
	setPerms("list_roles", "system:user:list")
	if got := found("roles"); !slices.Contains(got, "list_roles") {
		t.Errorf("list_roles given perms user 2 holds: roles finds %v (the kept set outlived the catalog)", got)
	}
	setPerms("list_users", "hr:leave:list")
	if got := found("users"); slices.Contains(got, "list_users") {
		t.Errorf("list_users given perms user 2 lacks: users finds %v (the kept set outlived the catalog)", got)
	}
}

// TestQuotaUseNarrowed: GET /v1/quotas named, in each rule's applies_to,
// every plugin and tag of the rule, those of tools hidden from the user
// asking included. A per-user caller is told of its rules only the
// tools it may use; a rule of none of them is left out. The service
// sees them whole.
func TestQuotaUseNarrowed(t *testing.T) {
	e := newRuoYiEnv(t, access.ModeOpen)
	payroll := fmt.Sprintf(`{"name":"payroll","description":"d","parameters":{"type":"object","properties":{}},"tags":["payroll","hr"],
	  "execution":{"method":"GET","base_url":"%s/payroll"},"perms":["hr:payroll:list"]}`, e.up.URL)
	weather := fmt.Sprintf(`{"name":"forecast","description":"d","parameters":{"type":"object","properties":{}},"tags":["hr"],
	  "execution":{"method":"GET","base_url":"%s/forecast"}}`, e.up.URL)
	for _, doc := range []string{payroll, weather} {
		if code, out := e.do("POST", "/v1/plugins", adminToken, json.RawMessage(doc)); code != http.StatusCreated {
			t.Fatalf("add: %d %v", code, out)
		}
	}
	for _, rule := range []map[string]any{
		{"name": "lists", "plugins": []string{"list_roles", "list_users"}, "calls": 5, "window": "day"},
		{"name": "secret-ones", "plugins": []string{"list_roles", "leave"}, "calls": 5, "window": "day"},
		{"name": "by-tag", "tags": []string{"payroll", "hr"}, "calls": 5, "window": "day"},
		{"name": "payroll-only", "tags": []string{"payroll"}, "calls": 5, "window": "day"},
		{"name": "everything", "calls": 50, "window": "day"},
	} {
		if code, out := e.do("POST", "/v1/quotas/rules", adminToken, rule); code != http.StatusCreated {
			t.Fatalf("rule: %d %v", code, out)
		}
	}
	use := func(token, query string) map[string]string {
		code, out := e.do("GET", "/v1/quotas"+query, token, nil)
		if code != http.StatusOK {
			t.Fatalf("%d %v", code, out)
		}
		got := map[string]string{}
		for _, q := range out["quotas"].([]any) {
			m := q.(map[string]any)
			got[m["rule"].(string)] = m["applies_to"].(string)
		}
		return got
	}
	if got, want := use(e.tokens[2], ""), map[string]string{"lists": "list_users", "by-tag": "tools tagged hr", "everything": "all tools"}; !maps.Equal(got, want) {
		t.Errorf("user 2's own quotas %v, want %v", got, want)
	}
	if got := use(e.tokens[1], ""); got["secret-ones"] != "list_roles, leave" || got["payroll-only"] != "tools tagged payroll" || len(got) != 5 {
		t.Errorf("user 1 (*:*:*) sees %v", got)
	}
	if got := use(serviceToken, "?user_id=2"); got["secret-ones"] != "list_roles, leave" || got["by-tag"] != "tools tagged payroll or hr" || len(got) != 5 {
		t.Errorf("the service sees %v", got)
	}
}

// TestAccessDisabledUserRuoYi: a user RuoYi would not log in — disabled
// (sys_user.status '1') — used every plugin without perms under
// BLINDEXEC_TOOL_ACCESS=open with its per-user token: listed them, called
// them with its stored credentials. Now such a user may use no tool, with
// or without perms, over every route, and the access route says why.
func TestAccessDisabledUserRuoYi(t *testing.T) {
	e := newRuoYiEnv(t, access.ModeOpen)
	if _, err := e.st.DB().Exec("update sys_user set status = '1' where user_id = 2"); err != nil {
		t.Fatal(err)
	}
	code, out := e.do("GET", "/v1/tools", e.tokens[2], nil)
	if code != http.StatusOK || len(out["tools"].([]any)) != 0 {
		t.Errorf("a disabled user's tools: %d %v, want none", code, out)
	}
	before := len(e.up.received())
	code, out = e.do("POST", "/v1/tools/weather/call", e.tokens[2], map[string]any{"q": "x"})
	errBody, _ := out["error"].(map[string]any)
	if code != http.StatusForbidden || errBody["code"] != "permission_denied" || len(e.up.received()) != before {
		t.Errorf("a disabled user's call of an open plugin: %d %v", code, out)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(),
		&sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(e.tokens[2])}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if listed, err := cs.ListTools(t.Context(), nil); err != nil || len(listed.Tools) != 0 {
		t.Errorf("a disabled user's tools/list: %v %v", listed, err)
	}
	code, out = e.do("GET", "/v1/tools/weather/access?user_id=2", serviceToken, nil)
	decision, _ := out["decision"].(map[string]any)
	steps, _ := decision["steps"].([]any)
	if code != http.StatusOK || decision["allowed"] != false || len(steps) == 0 || steps[len(steps)-1].(map[string]any)["reason"] != "login" {
		t.Errorf("why a disabled user may not use weather: %d %v", code, out)
	}
	// User 1 is still RuoYi's: the open plugin is its.
	if code, out := e.do("POST", "/v1/tools/weather/call", e.tokens[1], map[string]any{"q": "x"}); code != http.StatusOK {
		t.Errorf("user 1: %d %v", code, out)
	}
}

// TestMCPRevokedTokenStreams: a per-user token revoked while its client
// holds a stream open — a 2025-11-25 session's GET stream, a 2026-07-28
// subscriptions/listen — went on being told of catalog changes (a tool
// hidden from the user added included), its requests refused but the
// stream kept. Now the revocation ends the token's sessions and streams,
// and so does a change of the token's perms (review 72: the stream went on
// with the perms it was opened with).
func TestMCPRevokedTokenStreams(t *testing.T) {
	e := newRuoYiEnv(t, access.ModeOpen)
	revoke := func(t *testing.T, id int64) {
		if code, _ := e.do("DELETE", fmt.Sprintf("/v1/tokens/%d", id), adminToken, nil); code != http.StatusNoContent {
			t.Fatal(code)
		}
	}
	narrow := func(t *testing.T, id int64) { // by RuoYi's SQL, the counter moved as MySQL's trigger moves it
		if _, err := e.st.DB().Exec("UPDATE sys_ai_token SET perms = 'system:role:list' WHERE token_id = ?", id); err != nil {
			t.Fatal(err)
		}
		if err := e.st.BumpCounters(t.Context(), "token"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.changes.Poll(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		for change, end := range map[string]func(*testing.T, int64){"revoked": revoke, "narrowed": narrow} {
			i++
			t.Run(era+" "+change, func(t *testing.T) { revokedTokenStream(t, e, i, era, end) })
		}
	}
}

// revokedTokenStream opens a stream of era with a new token of user 2,
// makes end revoke or narrow it, and fails t if the stream is still told
// of catalog changes.
func revokedTokenStream(t *testing.T, e *ruoyiEnv, i int, era string, end func(*testing.T, int64)) {
	code, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 2, "perms": []string{"system:user:list"}})
	if code != http.StatusCreated {
		t.Fatal(code, tok)
	}
	changed := make(chan struct{}, 8)
	opts := &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} }}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, opts).Connect(t.Context(),
		&sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(tok["token"].(string))}},
		&sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != era {
		t.Fatalf("negotiated %s", v)
	}
	// A tool the token may use (no perms): a tool hidden from it tells
	// no session (TestMCPToldOnlyOfItsTools).
	added := func(name string) {
		doc := fmt.Sprintf(`{"name":%q,"description":"d","parameters":{"type":"object","properties":{}},
		  "execution":{"method":"GET","base_url":"%s/x"},"perms":[]}`, name, e.up.URL)
		if code, out := e.do("POST", "/v1/plugins", adminToken, json.RawMessage(doc)); code != http.StatusCreated {
			t.Fatal(code, out)
		}
	}
	// The stream is open: a change reaches it (the test's own check).
	deadline := time.After(5 * time.Second)
	for n := 0; ; n++ {
		added(fmt.Sprintf("added_%d_%d", i, n))
		select {
		case <-changed:
		case <-time.After(300 * time.Millisecond):
			continue
		case <-deadline:
			t.Fatal("the open stream is told of no change")
		}
		break
	}
	end(t, int64(tok["token_id"].(float64)))
	time.Sleep(200 * time.Millisecond)
	for len(changed) > 0 {
		<-changed
	}
	added(fmt.Sprintf("added_%d_after", i))
	select {
	case <-changed:
		t.Error("the stream of a token revoked or narrowed since was told of a catalog change")
	case <-time.After(2 * time.Second):
	}
}

// TestMCPToldOnlyOfItsTools: every session of /mcp was told
// notifications/tools/list_changed (a 2026-07-28 subscriptions/listen
// stream alike) on any catalog change, one of a tool hidden from its user
// included: a user learnt when tools it may not see were added, changed or
// removed. Now a session is told only when the tools it would list
// changed: a visible tool's change, or a tool's perms giving it or taking
// it from the user.
func TestMCPToldOnlyOfItsTools(t *testing.T) {
	e := newRuoYiEnv(t, access.ModeOpen)
	put := func(t *testing.T, name, description, perms string) {
		doc := fmt.Sprintf(`{"name":%q,"description":%q,"parameters":{"type":"object","properties":{"q":{"type":"string"}}},
		  "execution":{"method":"GET","base_url":"%s/%s"},"perms":%s}`, name, description, e.up.URL, name, perms)
		code, out := e.do("PUT", "/v1/plugins/"+name, adminToken, json.RawMessage(doc))
		if code == http.StatusNotFound {
			code, out = e.do("POST", "/v1/plugins", adminToken, json.RawMessage(doc))
		}
		if code != http.StatusOK && code != http.StatusCreated {
			t.Fatal(name, code, out)
		}
	}
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			changed := make(chan struct{}, 8)
			opts := &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} }}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, opts).Connect(t.Context(),
				&sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(e.tokens[2])}},
				&sdk.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			told := func(what string, want bool) {
				t.Helper()
				wait := 2 * time.Second // a listen stream polls every second
				if want {
					wait = 5 * time.Second
				}
				select {
				case <-changed:
					if !want {
						t.Errorf("%s: told", what)
					}
				case <-time.After(wait):
					if want {
						t.Errorf("%s: not told", what)
					}
				}
				for len(changed) > 0 {
					<-changed
				}
			}
			// The listen stream open, and a change the watcher saw only
			// now (the environment's tools, added before the session)
			// told and listed.
			time.Sleep(1500 * time.Millisecond)
			for len(changed) > 0 {
				<-changed
			}
			if _, err := cs.ListTools(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			put(t, "hidden_"+era[:4], "added", `["x:y:z"]`)
			told("a hidden tool added", false)
			put(t, "list_roles", "changed "+era, `["system:role:list"]`)
			told("a hidden tool changed", false)
			put(t, "weather", "changed "+era, `[]`)
			told("a visible tool changed", true)
			put(t, "list_roles", "open "+era, `[]`)
			told("a hidden tool's perms giving it to the user", true)
			put(t, "list_roles", "closed "+era, `["system:role:list"]`)
			told("a visible tool's perms taking it from the user", true)
		})
	}
}

// TestSearchToolsNamesTheUsersLanguages: search_tools' description over
// /mcp and in runs named the languages of the whole catalog's tools, those
// hidden from the user included (here Chinese, only in tools user 2 may
// not use). Now it names those of the tools the user may use.
func TestSearchToolsNamesTheUsersLanguages(t *testing.T) {
	llm := openaitest.New(t)
	e := newRuoYiEnv(t, access.ModeOpen, withModel(llm), func(s *api.Server) {
		s.MCP.ToolSearch = toolset.Config{Mode: toolset.ModeAlways}
		s.Runner.ToolSearch = toolset.Config{Mode: toolset.ModeAlways}
	})
	for i, title := range []string{"List the open issues", "Create a pull request", "Delete a repository", "Read the weather forecast"} {
		doc := fmt.Sprintf(`{"name":"english_%d","title":%q,"description":"A public tool anyone may use","parameters":{"type":"object","properties":{}},
		  "execution":{"method":"GET","base_url":"%s/e"},"perms":[]}`, i, title, e.up.URL)
		if code, out := e.do("POST", "/v1/plugins", adminToken, json.RawMessage(doc)); code != http.StatusCreated {
			t.Fatal(code, out)
		}
	}
	for i, title := range []string{"查询工资单", "发放年终奖金", "审批报销单据"} {
		doc := fmt.Sprintf(`{"name":"payroll_%d","title":%q,"description":"财务部门的内部工具，仅限授权人员使用","parameters":{"type":"object","properties":{}},
		  "execution":{"method":"GET","base_url":"%s/p"},"perms":["x:y:z"]}`, i, title, e.up.URL)
		if code, out := e.do("POST", "/v1/plugins", adminToken, json.RawMessage(doc)); code != http.StatusCreated {
			t.Fatal(code, out)
		}
	}
	for user, want := range map[int64]string{1: "described in English and Chinese:", 2: "described in English:"} {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(e.tokens[user])}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		list, err := cs.ListTools(t.Context(), nil)
		cs.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d := list.Tools[0].Description; list.Tools[0].Name != "search_tools" || !strings.Contains(d, want) {
			t.Errorf("user %d: /mcp search_tools: %q, want %q", user, d, want)
		}
	}
	llm.Script(openaitest.Turn{Content: "done"})
	// A run of the tools user 2 may use: searched within the catalog's index.
	if code, reply := e.do("POST", "/v1/runs", e.tokens[2], map[string]any{"plugin_names": []string{"english_0", "english_1", "english_2", "english_3", "weather"},
		"messages": []map[string]any{{"role": "user", "content": "hello"}}}); code != http.StatusOK {
		t.Fatalf("run: %d %v", code, reply)
	}
	reqs := llm.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var req struct {
		Tools []struct {
			Function struct{ Name, Description string }
		}
	}
	if err := json.Unmarshal(reqs[0], &req); err != nil || len(req.Tools) == 0 {
		t.Fatal(err, string(reqs[0]))
	}
	if f := req.Tools[0].Function; f.Name != "search_tools" || !strings.Contains(f.Description, "described in English:") {
		t.Errorf("a run of user 2: search_tools: %q", f.Description)
	}
}
