package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// column is what RuoYi's side relies on of one column on MySQL: its type
// as information_schema spells it (COLUMN_TYPE, lower case; "json" stands
// for MySQL's JSON and MariaDB's LONGTEXT with a json_valid check), whether
// it may be NULL, its default ("" none), and its key (PRI, UNI, MUL or "").
type column struct {
	name, typ string
	null      bool
	def, key  string
}

// ruoyiAudit are the columns every RuoYi sys_ table has, typed as RuoYi's
// own DDL types them (ry_*.sql: varchar(64) default ”, datetime,
// varchar(500) default null).
var ruoyiAudit = []column{
	{"create_by", "varchar(64)", true, "", ""},
	{"create_time", "datetime", true, "", ""},
	{"update_by", "varchar(64)", true, "", ""},
	{"update_time", "datetime", true, "", ""},
	{"remark", "varchar(500)", true, "", ""},
}

// contractTables are SPEC §2's tables: seed 001 §三's sys_ai_plugin
// (plugin_id BIGINT, name unique VARCHAR, title and icon_url VARCHAR,
// description TEXT, the three JSON columns, status CHAR '0'/'1') and
// sys_user_credential, which the Java side writes (docs/security.md,
// "Credential storage"), each with RuoYi's audit columns.
var contractTables = map[string][]column{
	"sys_ai_plugin": append([]column{
		{"plugin_id", "bigint", false, "", "PRI"},
		{"name", "varchar(64)", false, "", "UNI"},
		{"title", "varchar(255)", true, "", ""},
		{"description", "text", true, "", ""},
		{"icon_url", "varchar(512)", true, "", ""},
		{"parameter_schema", "json", true, "", ""},
		{"execution_config", "json", true, "", ""},
		{"status", "char(1)", false, "0", ""},
		{"required_credentials", "json", true, "", ""},
	}, ruoyiAudit...),
	"sys_user_credential": append([]column{
		{"credential_id", "bigint", false, "", "PRI"},
		{"user_id", "bigint", false, "", "MUL"},
		{"credential_key", "varchar(128)", false, "", ""},
		{"credential_value", "text", false, "", ""},
		{"key_id", "varchar(32)", false, "", ""},
	}, ruoyiAudit...),
}

// TestRuoYiColumns (SPEC §2): the catalog and credential tables have seed
// 001's columns and RuoYi's audit columns, on MySQL of the types RuoYi's
// MySQL gives them, so that RuoYi's generated entities and admin pages
// read and write them; on SQLite, the same names. A migration changing
// one (a type, a NULL, the status default, the name's uniqueness, the
// auto-increment key RuoYi's inserts leave out) fails here.
func TestRuoYiColumns(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for table, want := range contractTables {
			for _, p := range columnProblems(ctx, t, s, table, want) {
				t.Errorf("%s", p)
			}
		}
		if s.Dialect() != store.DialectMySQL {
			return
		}
		// The check sees a change: RuoYi's status convention widened.
		if _, err := s.DB().ExecContext(ctx, "ALTER TABLE sys_ai_plugin MODIFY status CHAR(2) NOT NULL DEFAULT '00'"); err != nil {
			t.Fatal(err)
		}
		if ps := columnProblems(ctx, t, s, "sys_ai_plugin", contractTables["sys_ai_plugin"]); len(ps) != 1 || !strings.Contains(ps[0], "status") {
			t.Errorf("a widened status column: problems %q, want one naming status", ps)
		}
	})
}

var displayWidth = regexp.MustCompile(`^(bigint|int)\(\d+\)`)

// columnProblems says how table differs from want: on MySQL by type,
// nullability, default, key and auto-increment; on SQLite by name and
// primary key.
func columnProblems(ctx context.Context, t *testing.T, s *store.Store, table string, want []column) []string {
	t.Helper()
	type got struct {
		typ, null, def, key, extra string
		hasDef                     bool
	}
	have := map[string]got{}
	var rows *sql.Rows
	var err error
	if s.Dialect() == store.DialectMySQL {
		rows, err = s.DB().QueryContext(ctx, `SELECT c.COLUMN_NAME, LOWER(c.COLUMN_TYPE), c.IS_NULLABLE, c.COLUMN_DEFAULT, c.COLUMN_KEY, c.EXTRA,
			  EXISTS (SELECT 1 FROM information_schema.CHECK_CONSTRAINTS k WHERE k.CONSTRAINT_SCHEMA = c.TABLE_SCHEMA
			          AND k.CONSTRAINT_NAME = c.COLUMN_NAME AND k.CHECK_CLAUSE LIKE '%json_valid%')
			FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = DATABASE() AND c.TABLE_NAME = ?`, table)
	} else {
		rows, err = s.DB().QueryContext(ctx, `SELECT name, LOWER(type), CASE WHEN "notnull" = 1 THEN 'NO' ELSE 'YES' END, dflt_value,
			  CASE WHEN pk > 0 THEN 'PRI' ELSE '' END, '', 0 FROM pragma_table_info(?)`, table)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var g got
		var def sql.NullString
		var jsonCheck bool
		if err := rows.Scan(&name, &g.typ, &g.null, &def, &g.key, &g.extra, &jsonCheck); err != nil {
			t.Fatal(err)
		}
		// MariaDB and MySQL before 8.0.19 spell an integer's display width.
		g.typ = displayWidth.ReplaceAllString(g.typ, "$1")
		if jsonCheck && g.typ == "longtext" {
			g.typ = "json" // MariaDB's JSON
		}
		// MariaDB quotes a string default and says NULL for none.
		g.def, g.hasDef = strings.Trim(def.String, "'"), def.Valid && def.String != "NULL"
		have[name] = g
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, c := range want {
		g, ok := have[c.name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s.%s: no such column", table, c.name))
		case s.Dialect() != store.DialectMySQL:
			if (c.key == "PRI") != (g.key == "PRI") {
				problems = append(problems, fmt.Sprintf("%s.%s: primary key %v, want %v", table, c.name, g.key == "PRI", c.key == "PRI"))
			}
		case g.typ != c.typ:
			problems = append(problems, fmt.Sprintf("%s.%s: type %s, want %s", table, c.name, g.typ, c.typ))
		case (g.null == "YES") != c.null:
			problems = append(problems, fmt.Sprintf("%s.%s: nullable %s, want %v", table, c.name, g.null, c.null))
		case c.def != "" && (!g.hasDef || g.def != c.def):
			problems = append(problems, fmt.Sprintf("%s.%s: default %q, want %q", table, c.name, g.def, c.def))
		case c.key != "" && g.key != c.key:
			problems = append(problems, fmt.Sprintf("%s.%s: key %q, want %q", table, c.name, g.key, c.key))
		case c.key == "PRI" && !strings.Contains(g.extra, "auto_increment"):
			problems = append(problems, fmt.Sprintf("%s.%s: not auto_increment: RuoYi's inserts leave the id out", table, c.name))
		}
	}
	return problems
}
