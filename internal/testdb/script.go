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
