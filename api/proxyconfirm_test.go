package api

import (
	"net/http"
	"testing"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestProxyCallsFollowTheRule: the seed 004 proxy holds a per-user
// token's call of a tool its server does not mark read-only (409
// confirmation_required, nothing sent), sends it with the confirmation,
// and counts a tool with a catalog row as that row (classified not
// consequential: sent at once).
func TestProxyCallsFollowTheRule(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newMCPEnv(t, st, func(s *Server) { s.Confirm = confirm.Consequential })
		e.register()
		before := len(e.up.Calls())
		path, args, id := heldProxyCall(t, e)
		if code, out := e.do("POST", path, e.userTok, args, HeaderConfirmation, id); code != http.StatusOK || len(e.up.Calls()) != before+1 {
			t.Fatalf("with the confirmation: %d %v", code, out)
		}
		if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != http.StatusOK {
			t.Fatalf("import: %d %v", code, out)
		}
		if code, out := e.do("POST", "/v1/plugins/consequential", mcpAdmin, map[string]any{"names": []string{"rb_answer"}, "consequential": false}); code != http.StatusOK {
			t.Fatalf("classify: %d %v", code, out)
		}
		if code, out := e.do("POST", path, e.userTok, args); code != http.StatusOK || len(e.up.Calls()) != before+2 {
			t.Errorf("a proxied tool whose row is not consequential: %d %v", code, out)
		}
	})
}

// heldProxyCall makes user 7's call of the med server's rb.answer through
// the proxy, which its server does not mark read-only: answered 409
// confirmation_required, nothing sent. It returns the route, the
// arguments and the pending id.
func heldProxyCall(t *testing.T, e *mcpEnv) (path string, args map[string]any, id string) {
	t.Helper()
	path, args = "/v1/mcp/proxy/med/tools/rb.answer/call", map[string]any{"question": "restart?"}
	before := len(e.up.Calls())
	code, out := e.do("POST", path, e.userTok, args)
	if code != http.StatusConflict || errCode(out) != "confirmation_required" || len(e.up.Calls()) != before {
		t.Fatalf("a proxied call: %d %v, want 409 confirmation_required, nothing sent", code, out)
	}
	return path, args, out["error"].(map[string]any)["details"].(map[string]any)["pending"].(map[string]any)["id"].(string)
}
