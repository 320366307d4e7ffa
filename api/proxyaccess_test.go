package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// withAccess judges the env's calls and lists by rule.
func withAccess(rule *access.Checker) func(*Server) {
	return func(s *Server) { s.Access, s.Executor.Access = rule, rule }
}

// TestProxyAccessBeforeUpstream: the proxy decides from the catalog whether
// the user may use the tool before it asks the server anything. A user
// refused a tool without a row (BLINDEXEC_TOOL_ACCESS=perms) makes no
// request to the server with the user's credentials, and a tool the
// server has answers as one it lacks; a row the user may not use sends
// nothing either.
func TestProxyAccessBeforeUpstream(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newMCPEnv(t, st, withAccess(&access.Checker{Mode: access.ModePerms}))
		e.register()
		refused := func(tool string) string {
			t.Helper()
			code, out := e.do("POST", "/v1/mcp/proxy/med/tools/"+tool+"/call", e.userTok, map[string]any{"question": "restart?"})
			if code != http.StatusForbidden || errCode(out) != engine.CodePermissionDenied {
				t.Fatalf("%s: %d %v, want 403 %s", tool, code, out, engine.CodePermissionDenied)
			}
			return strings.ReplaceAll(errMessage(out), proxyName(tool), "TOOL")
		}
		held, missing := refused("rb.answer"), refused("no_such_tool")
		if held != missing {
			t.Errorf("a tool the server has and one it lacks answer apart:\n%s\n%s", held, missing)
		}
		if n := e.up.Sessions(); n != 0 {
			t.Errorf("the server was asked %d times with the user's credentials before the refusal, want none", n)
		}

		// A row the user may not use: refused from the row, nothing sent.
		if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != http.StatusOK {
			t.Fatalf("import: %d %v", code, out)
		}
		if code, out := e.do("POST", "/v1/plugins/perms", mcpAdmin, map[string]any{"names": []string{"rb_answer"}, "perms": []string{"med:answer"}}); code != http.StatusOK {
			t.Fatalf("perms: %d %v", code, out)
		}
		before := len(e.up.Calls())
		code, out := e.do("POST", "/v1/mcp/proxy/med/tools/rb.answer/call", e.userTok, map[string]any{"question": "restart?"})
		if code != http.StatusForbidden || !strings.Contains(errMessage(out), "med:answer") || len(e.up.Calls()) != before {
			t.Errorf("a row the user may not use: %d %v, want 403 naming its perms, nothing sent", code, out)
		}
	})
}

// TestProxyDisabledRow: a disabled row calling a tool refuses the
// proxied call as a disabled plugin is refused everywhere (409
// plugin_disabled), whatever the access mode: the tool is not the
// server's alone for want of an enabled row.
func TestProxyDisabledRow(t *testing.T) {
	for _, mode := range []access.Mode{access.ModeOpen, access.ModePerms} {
		t.Run(string(mode), func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, st *store.Store) {
				e := newMCPEnv(t, st, withAccess(&access.Checker{Mode: mode}))
				e.register()
				if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != http.StatusOK {
					t.Fatalf("import: %d %v", code, out)
				}
				if code, out := e.do("PATCH", "/v1/plugins/rb_answer", mcpAdmin, map[string]any{"status": "1"}); code != http.StatusOK {
					t.Fatalf("disable: %d %v", code, out)
				}
				before := len(e.up.Calls())
				code, out := e.do("POST", "/v1/mcp/proxy/med/tools/rb.answer/call", e.userTok, map[string]any{"question": "restart?"})
				if code != http.StatusConflict || errCode(out) != engine.CodePluginDisabled || len(e.up.Calls()) != before {
					t.Errorf("a disabled row's tool: %d %v, want 409 %s, nothing sent", code, out, engine.CodePluginDisabled)
				}
				// The catalog route answers the same.
				if code, out := e.do("POST", "/v1/tools/rb_answer/call", e.userTok, map[string]any{"question": "restart?"}); code != http.StatusConflict || errCode(out) != engine.CodePluginDisabled {
					t.Errorf("the catalog route: %d %v", code, out)
				}
			})
		})
	}
}
