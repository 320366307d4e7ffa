package api

import (
	"net/http"
	"testing"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPApprovalBindsTheServer (issue 44, case 6): an approval of an MCP
// tool's call binds where the call goes — the server's URL, headers and
// auth — not only its name: the server row changed between approval and
// sending makes the confirmation stale, and neither server receives the
// call.
func TestMCPApprovalBindsTheServer(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newMCPEnv(t, st, func(s *Server) { s.Confirm = confirm.Consequential })
		e.register()
		other := mcptest.New(t)
		// Cleanups run last-in first-out: the manager's sessions (their
		// standalone streams) end before other's Close waits for them.
		t.Cleanup(func() { e.cfg.Manager.Close() })
		path, args, id := heldProxyCall(t, e)
		// The row moves to another server under the same id and name.
		if code, out := e.do("DELETE", "/v1/mcp/servers/med", mcpAdmin, nil); code != http.StatusOK && code != http.StatusNoContent {
			t.Fatalf("delete: %d %v", code, out)
		}
		spec := map[string]any{"mcp_id": "med", "name": "med", "url": other.Endpoint, "auth_config": map[string]any{"type": "bearer", "token": "med_token"}}
		if code, out := e.do("POST", "/v1/mcp/servers", mcpAdmin, spec); code != http.StatusCreated {
			t.Fatalf("register again: %d %v", code, out)
		}
		before := len(e.up.Calls())
		code, out := e.do("POST", path, e.userTok, args, HeaderConfirmation, id)
		if code != http.StatusConflict || errCode(out) != "confirmation_stale" || len(other.Calls()) != 0 || len(e.up.Calls()) != before {
			t.Fatalf("approved, then the server changed: %d %v; %d calls reached the new server, want 409 confirmation_stale and none", code, out, len(other.Calls()))
		}
		it, err := st.GetPendingItem(t.Context(), id)
		if err != nil || it.Status != confirm.Stale {
			t.Errorf("the item: %+v %v, want stale", it, err)
		}
	})
}
