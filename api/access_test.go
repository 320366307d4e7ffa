package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/egress/egresstest"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
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

func newRuoYiEnv(t *testing.T, mode access.Mode) *ruoyiEnv {
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
		s.Executor.Access = checker
		m := enginemcp.NewManager(st, egresstest.Client(t))
		t.Cleanup(func() { m.Close() })
		s.MCP = &api.MCPConfig{Manager: m}
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
		}
	}
}
