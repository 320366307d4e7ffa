package testdb

import (
	"compress/gzip"
	"database/sql"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/blindexec/blindexec/store"
)

// Script is a migrated store on a fresh MySQL/MariaDB database holding,
// beside the engine's tables, what a project's own database script
// creates (RuoYi's, unmodified; gzip-compressed when its name ends in
// .gz). It is skipped without BLINDEXEC_TEST_MYSQL_DSN.
func Script(t testing.TB, script string) *store.Store {
	t.Helper()
	st, _ := ScriptDSN(t, script)
	return st
}

// ScriptDSN is Script, with the database's DSN, for engines started on it
// (replicas).
func ScriptDSN(t testing.TB, script string) (*store.Store, string) {
	t.Helper()
	dsn := DSN(t, store.DialectMySQL)
	st, err := store.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(script)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(script, ".gz") {
		if r, err = gzip.NewReader(f); err != nil {
			t.Fatal(err)
		}
	}
	text, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, store.DialectMySQL+":"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MultiStatements = true // the script as the project ships it, split by the server
	loader, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer loader.Close()
	if _, err := loader.ExecContext(t.Context(), string(text)); err != nil {
		t.Fatalf("load %s: %v", script, err)
	}
	return st, dsn
}

// RuoYi is a migrated store of kind holding RuoYi's grants and its DSN:
// on MySQL/MariaDB what script (RuoYi's own, as Script) creates; on
// SQLite, where RuoYi's script does not run, the five tables the ruoyi
// source reads with the columns it reads, holding what the script gives
// user 2 (ry): role 2 (common) and its menu system:user:list.
func RuoYi(t *testing.T, kind, script string) (*store.Store, string) {
	t.Helper()
	if kind == store.DialectMySQL {
		return ScriptDSN(t, script)
	}
	dsn := DSN(t, kind)
	st := At(t, dsn)
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE sys_user (user_id BIGINT PRIMARY KEY, user_name VARCHAR(30), status CHAR(1) DEFAULT '0', del_flag CHAR(1) DEFAULT '0')",
		"CREATE TABLE sys_user_role (user_id BIGINT, role_id BIGINT, PRIMARY KEY (user_id, role_id))",
		"CREATE TABLE sys_role (role_id BIGINT PRIMARY KEY, role_key VARCHAR(100), status CHAR(1) DEFAULT '0', del_flag CHAR(1) DEFAULT '0')",
		"CREATE TABLE sys_role_menu (role_id BIGINT, menu_id BIGINT, PRIMARY KEY (role_id, menu_id))",
		"CREATE TABLE sys_menu (menu_id BIGINT PRIMARY KEY, perms VARCHAR(100), status CHAR(1) DEFAULT '0')",
		"INSERT INTO sys_user (user_id, user_name) VALUES (1, 'admin'), (2, 'ry')",
		"INSERT INTO sys_role (role_id, role_key) VALUES (1, 'admin'), (2, 'common')",
		"INSERT INTO sys_user_role VALUES (1, 1), (2, 2)",
		"INSERT INTO sys_menu (menu_id, perms) VALUES (100, 'system:user:list')",
		"INSERT INTO sys_role_menu VALUES (2, 100)",
	} {
		if _, err := st.DB().ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return st, dsn
}
