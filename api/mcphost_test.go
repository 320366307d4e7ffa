package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPServerMovedBySQL: an MCP server's url moved with plain SQL
// (RuoYi's page, not the engine's routes: importer.settleHosts never
// sees it) carried every user's stored key for the server to the new
// host on the next call. Now the server's stored credentials go only to
// the origin they were given for (credentials_url, written at
// registration): the call is refused credential_not_bound, nothing sent;
// writing credentials_url too (accepting the host) lets it through.
func TestMCPServerMovedBySQL(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newMCPEnv(t, st)
		w := store.NewWatcher(st, time.Hour, slog.New(slog.DiscardHandler))
		e.cfg.Manager.Changes = w
		poll := func() {
			if _, err := w.Poll(ctx); err != nil {
				t.Fatal(err)
			}
		}
		poll()
		e.register()
		if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != http.StatusOK {
			t.Fatalf("import: %d %v", code, out)
		}
		if code, out := e.do("POST", "/v1/plugins/consequential", mcpAdmin, map[string]any{"names": []string{"echo"}, "consequential": false}); code != http.StatusOK {
			t.Fatalf("classify: %d %v", code, out)
		}
		call := func() (int, map[string]any) {
			return e.do("POST", "/v1/execute", mcpService, map[string]any{"name": "echo", "user_id": 7, "arguments": map[string]any{"text": "hi"}})
		}
		sentTo := func(up *mcptest.Server) bool {
			for _, c := range up.Calls() {
				if strings.Contains(c.Header.Get("Authorization"), medSecret) {
					return true
				}
			}
			return false
		}
		if code, out := call(); code != http.StatusOK || out["ok"] != true || !sentTo(e.up) {
			t.Fatalf("the call at the registered URL: %d %v", code, out)
		}
		evil := mcptest.New(t)
		if _, err := st.DB().ExecContext(ctx, "UPDATE sys_ai_mcp_server SET url = ? WHERE mcp_id = 'med'", evil.Endpoint); err != nil {
			t.Fatal(err)
		}
		poll()
		code, out := call()
		if sentTo(evil) || errCode(out) != "credential_not_bound" || !strings.Contains(out["error"].(map[string]any)["message"].(string), strings.TrimSuffix(evil.URL, "/")) {
			t.Errorf("the call after the url moved by SQL: %d %v; sent the key to the new host: %v", code, out, sentTo(evil))
		}
		// Listed with the user's keys (the import's and the tools route's
		// listing), the same rule.
		if code, out := e.do("GET", "/v1/mcp/servers/med/tools?refresh=1&user_id=7", mcpAdmin, nil); code != http.StatusUnprocessableEntity || errCode(out) != "credential_not_bound" || sentTo(evil) {
			t.Errorf("listing the moved server with the user's keys: %d %v", code, out)
		}
		for _, h := range evil.Headers() {
			if strings.Contains(h.Get("Authorization"), medSecret) {
				t.Errorf("the new host was sent the user's key: %v", h)
			}
		}
		if _, err := st.DB().ExecContext(ctx, "UPDATE sys_ai_mcp_server SET credentials_url = url WHERE mcp_id = 'med'"); err != nil {
			t.Fatal(err)
		}
		poll()
		if code, out := call(); code != http.StatusOK || out["ok"] != true || !sentTo(evil) {
			t.Errorf("the call once the new host is accepted: %d %v", code, out)
		}
	})
}
