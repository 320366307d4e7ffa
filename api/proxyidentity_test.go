package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestProxyCallIsItsRow is issue 44's case 5 (point 3): an MCP tool
// imported under a prefixed name (another plugin held its name) is, when
// called through /v1/mcp/proxy/{mcp_id}/tools/{tool_name}/call, the very
// row the catalog route calls: a per-plugin quota on the prefixed row
// applies, and the tag rule of the plugin holding the unprefixed name
// does not.
func TestProxyCallIsItsRow(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newMCPEnv(t, st)
		e.register()
		// An administrator's plugin holds the tool's name first.
		other := map[string]any{"name": "rb_answer", "description": "Another tool", "tags": []string{"other"},
			"parameters": map[string]any{"type": "object"}, "execution": map[string]any{"method": "GET", "base_url": "https://other.example/answer"}}
		if code, out := e.do("POST", "/v1/plugins", mcpAdmin, other); code != http.StatusCreated {
			t.Fatalf("add the other plugin: %d %v", code, out)
		}
		code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7})
		if code != http.StatusOK || !strings.Contains(strings.Join(anyStrings(out["added"]), " "), "med_rb_answer") {
			t.Fatalf("import: %d %v, want med_rb_answer added (the name prefixed)", code, out)
		}
		for _, rule := range []map[string]any{
			{"name": "med-answer-daily", "plugins": []string{"med_rb_answer"}, "calls": 2, "window": "day"},
			{"name": "other-tagged", "tags": []string{"other"}, "calls": 1, "window": "day"},
		} {
			if code, out := e.do("POST", "/v1/quotas/rules", mcpAdmin, rule); code != http.StatusCreated {
				t.Fatalf("rule: %d %v", code, out)
			}
		}
		path := "/v1/mcp/proxy/med/tools/rb.answer/call"
		args := map[string]any{"question": "restart?"}
		for i := range 2 {
			if code, out := e.do("POST", path, e.userTok, args); code != http.StatusOK {
				t.Fatalf("proxied call %d: %d %v (the other plugin's tag rule must not count it)", i, code, out)
			}
		}
		code, out = e.do("POST", path, e.userTok, args)
		if code != http.StatusTooManyRequests || errCode(out) != "quota_exceeded" || !strings.Contains(errMessage(out), "med_rb_answer") {
			t.Fatalf("third proxied call: %d %v, want 429 quota_exceeded by med-answer-daily", code, out)
		}
		if n := len(e.up.Calls()); n != 2 {
			t.Errorf("the upstream received %d calls, want 2", n)
		}
		// The catalog route counts against the same rule: the row is one.
		if code, out := e.do("POST", "/v1/tools/med_rb_answer/call", e.userTok, args); code != http.StatusTooManyRequests {
			t.Errorf("the catalog route after the proxy spent the quota: %d %v, want 429", code, out)
		}
	})
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestProxyRowRelays: a proxied tool with a catalog row is that row as
// the catalog has it when called (engine: a held copy of a row is never
// the call), and its MCP result comes back whole, isError included (seed
// 004 FR-004), as for a tool without one.
func TestProxyRowRelays(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newMCPEnv(t, st, func(s *Server) { // as serve wires it: the executor follows the catalog
			s.Changes = store.NewWatcher(st, time.Hour, s.Logger)
			s.Changes.Poll(t.Context())
			s.Catalog = catalog.New(st, s.Changes, s.Logger)
			s.Executor.Catalog = auth.NewCatalog(st, s.Catalog, s.Changes)
		})
		e.register()
		if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != http.StatusOK {
			t.Fatalf("import: %d %v", code, out)
		}
		code, out := e.do("POST", "/v1/mcp/proxy/med/tools/fail/call", e.userTok, map[string]any{"reason": "boom"})
		if code != http.StatusOK || out["isError"] != true {
			t.Fatalf("a row's tool error: %d %v, want 200 with isError", code, out)
		}
		if code, out := e.do("PATCH", "/v1/plugins/fail", mcpAdmin, map[string]string{"status": "1"}); code != http.StatusOK {
			t.Fatalf("disable: %d %v", code, out)
		}
		if code, out := e.do("POST", "/v1/mcp/proxy/med/tools/fail/call", e.userTok, map[string]any{"reason": "boom"}); code != http.StatusConflict || errCode(out) != "plugin_disabled" {
			t.Fatalf("the disabled row: %d %v, want 409 plugin_disabled", code, out)
		}
	})
}
