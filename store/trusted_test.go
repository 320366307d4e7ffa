package store_test

import (
	"context"
	"testing"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/testdb"
)

// TestMigrationDistrustsMCPHints: migration 00024 adds the trusted flag
// of MCP servers (every existing one untrusted) and drops the "not
// consequential" suggestions earlier imports took from an upstream's
// readOnlyHint, so an unvetted server's tool is consequential again; an
// MCP tool's "consequential" suggestion, an HTTP plugin's suggestion and
// the administrator's column stay (issue 48 point 2).
func TestMigrationDistrustsMCPHints(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		st := testdb.Unmigrated(t, kind)
		if err := st.MigrateUpTo(ctx, 23); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DB().ExecContext(ctx, "INSERT INTO sys_ai_mcp_server (mcp_id, name, transport, url, status) VALUES ('m1', 'shop', 'streamable_http', 'https://shop.example/mcp', '0')"); err != nil {
			t.Fatal(err)
		}
		const ins = "INSERT INTO sys_ai_plugin (name, title, description, parameter_schema, execution_config, status, consequential) VALUES (?, 'T', 'd', '{\"type\":\"object\"}', ?, '0', ?)"
		mcp := func(hint string) string {
			return `{"execution": {"type": "mcp", "mcp_id": "m1", "tool_name": "t"}, "auth_config": {"type": "none"}` + hint + `}`
		}
		for _, row := range [][]any{
			{"look", mcp(`, "consequential_hint": false`), nil},
			{"wipe", mcp(`, "consequential_hint": true`), nil},
			{"plain", mcp(``), nil},
			{"chosen", mcp(`, "consequential_hint": false`), "0"},
			{"listing", `{"execution": {"method": "POST", "base_url": "https://x.example/"}, "consequential_hint": false}`, nil},
		} {
			if _, err := st.DB().ExecContext(ctx, ins, row...); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		srv, err := st.GetMCPServer(ctx, "m1")
		if err != nil || srv.Trusted {
			t.Fatalf("existing server after the migration: %+v, %v; want untrusted", srv, err)
		}
		for name, want := range map[string]bool{"look": true, "wipe": true, "plain": true, "chosen": false, "listing": false} {
			row, err := st.GetPlugin(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := catalog.PluginFromRow(row)
			if err != nil {
				t.Fatal(err)
			}
			if p.IsConsequential() != want {
				t.Errorf("%s: consequential %v after the migration, want %v (%s)", name, p.IsConsequential(), want, row.ExecutionConfig)
			}
		}
	})
}
