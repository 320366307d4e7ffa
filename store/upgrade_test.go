package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestUpgradeFrom00030 (ops78): a database of the engine before
// migrations 00031–00033, holding an OpenAPI source imported from a URL
// with userinfo and one without, an MCP server with oauth2 client
// credentials, a plugin, stored credentials and a token, migrated as
// serve migrates it: 00031 clears the options of the source with
// userinfo only, 00032 pins the token URL its users' client keys were
// given for, 00033's table takes replicas, and every other row is as it
// was, byte for byte.
func TestUpgradeFrom00030(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		st := testdb.Unmigrated(t, kind)
		if err := st.MigrateUpTo(ctx, 30); err != nil {
			t.Fatal(err)
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := st.DB().ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		exec("INSERT INTO sys_ai_import_source (kind, location, options) VALUES ('openapi', 'https://alice:pw-00030@specs.example/shop.json', ?), ('openapi', 'https://specs.example/open.json', ?)",
			`{"SourceURL":"https://alice:pw-00030@specs.example/shop.json","Prefix":"shop"}`, `{"SourceURL":"https://specs.example/open.json","Prefix":"open"}`)
		exec(`INSERT INTO sys_ai_mcp_server (mcp_id, name, transport, url, status, auth_config, credentials_url) VALUES ('m1', 'docs', 'streamable_http', 'https://mcp.example/mcp', '0', ?, 'https://mcp.example/mcp'), ('m2', 'plain', 'streamable_http', 'https://plain.example/mcp', '0', '{"type":"bearer","token":"T"}', 'https://plain.example/mcp')`,
			`{"type":"oauth2","oauth2":{"token_url":"https://auth.example/token","client_id":"CID","client_secret":"CSECRET"}}`)
		exec(`INSERT INTO sys_ai_plugin (name, title, description, parameter_schema, execution_config, status) VALUES ('listItems', 'List', 'd', '{"type":"object"}', '{"execution": {"method": "GET", "base_url": "https://shop.example/items"}, "auth_config": {"type": "api_key", "in": "header", "name": "X-Key", "key": "SHOP_K"}}', '0')`)
		exec("INSERT INTO sys_user_credential (user_id, credential_key, credential_value, key_id) VALUES (8, 'SHOP_K', 'v1:abcd1234:c2VhbGVk', 'abcd1234'), (8, 'CID', 'v1:abcd1234:Y2lk', 'abcd1234')")
		exec("INSERT INTO sys_ai_token (user_id, token_name, token_hash, token_prefix) VALUES (8, 'upgrade', ?, 'bx_abc')", strings.Repeat("a1", 32))
		dump := func(table, order string) string {
			t.Helper()
			rows, err := st.DB().QueryContext(ctx, "SELECT * FROM "+table+" ORDER BY "+order)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			var b strings.Builder
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				for i, v := range vals {
					if b, ok := v.([]byte); ok {
						vals[i] = string(b)
					}
				}
				fmt.Fprintln(&b, vals...)
			}
			return b.String()
		}
		kept := map[string]string{"sys_ai_plugin": "plugin_id", "sys_user_credential": "credential_id", "sys_ai_token": "token_id"}
		before := map[string]string{}
		for table, order := range kept {
			before[table] = dump(table, order)
		}

		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		for table, order := range kept {
			if after := dump(table, order); after != before[table] {
				t.Errorf("%s changed by the migrations:\nbefore %s\nafter  %s", table, before[table], after)
			}
		}
		var withUserinfo, plain int
		if err := st.DB().QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM sys_ai_import_source WHERE options IS NULL AND location LIKE '%alice%'), (SELECT COUNT(*) FROM sys_ai_import_source WHERE options LIKE '%open.json%')").Scan(&withUserinfo, &plain); err != nil {
			t.Fatal(err)
		}
		if withUserinfo != 1 || plain != 1 {
			t.Errorf("00031: options cleared of the source with userinfo %d, kept of the other %d; want 1 and 1", withUserinfo, plain)
		}
		for id, want := range map[string]string{"m1": "https://auth.example/token", "m2": ""} {
			srv, err := st.GetMCPServer(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got := deref(srv.CredentialsTokenURL); got != want {
				t.Errorf("00032: server %s's credentials_token_url %q, want %q", id, got, want)
			}
		}
		if err := st.PutReplica(ctx, &store.Replica{ReplicaID: "0123456789abcdef", Settings: "{}"}); err != nil {
			t.Fatal(err)
		}
		if rs, err := st.Replicas(ctx, time.Now().Add(-time.Minute), time.Now().Add(-time.Hour)); err != nil || len(rs) != 1 {
			t.Fatalf("00033: replicas %v, %v", rs, err)
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
