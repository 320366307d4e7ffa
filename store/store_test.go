package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func TestOpenDSN(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		dsn     string
		wantErr string // empty: must open
	}{
		{"sqlite file", "sqlite:" + filepath.Join(t.TempDir(), "x.db"), ""},
		{"unknown scheme", "postgres://u:secret@host/db", "unknown scheme"},
		{"no scheme", "blindexec.db", "unknown scheme"},
		{"empty sqlite path", "sqlite:", "empty path"},
		{"bad mysql dsn", "mysql:not a dsn", "open mysql database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := store.Open(ctx, tt.dsn)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Open(%q): %v", tt.dsn, err)
				}
				defer s.Close()
				if s.Dialect() != store.DialectSQLite {
					t.Errorf("Dialect() = %q, want %q", s.Dialect(), store.DialectSQLite)
				}
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded, want error containing %q", tt.dsn, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Open(%q) error %q does not contain %q", tt.dsn, err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("Open error leaks the DSN password: %v", err)
			}
		})
	}
}

func TestMigrate(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		// testdb has migrated once; a second run must be a no-op.
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		for _, table := range []string{"sys_ai_plugin", "sys_user_credential", "sys_ai_token", "sys_ai_execution", "sys_ai_import_source"} {
			var n int
			if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
				t.Errorf("table %s: %v", table, err)
			}
		}
		if err := s.Ping(ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name string
		src  any
		want string
	}{
		{"bytes (MySQL)", []byte(`{"a":1}`), `{"a":1}`},
		{"string (MariaDB, SQLite)", `[1,2]`, `[1,2]`},
		{"NULL", nil, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var j store.JSON
			if err := j.Scan(tt.src); err != nil {
				t.Fatalf("Scan(%v): %v", tt.src, err)
			}
			if string(j) != tt.want {
				t.Errorf("Scan(%v) = %q, want %q", tt.src, j, tt.want)
			}
		})
	}
	var j store.JSON
	if err := j.Scan(42); err == nil {
		t.Error("Scan(int) succeeded, want error")
	}
	if v, err := store.JSON(`{"a":`).Value(); err == nil {
		t.Errorf("Value of invalid JSON = %v, want error", v)
	}
	if v, err := store.JSON(nil).Value(); err != nil || v != nil {
		t.Errorf("Value of empty JSON = %v, %v; want nil, nil", v, err)
	}
	// A JSON null in an API body must become SQL NULL, not the text "null".
	var p struct{ S store.JSON }
	if err := json.Unmarshal([]byte(`{"S":null}`), &p); err != nil || p.S != nil {
		t.Errorf("unmarshal null = %q, %v; want empty", p.S, err)
	}
}

// jsonEqual compares documents, since MySQL normalises the stored text.
func jsonEqual(t *testing.T, got, want store.JSON) bool {
	t.Helper()
	if len(got) == 0 || len(want) == 0 {
		return len(got) == len(want)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("stored JSON %q: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want JSON %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}

func wantErrIs(t *testing.T, op string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want %v", op, err, target)
	}
}

func TestCheckMigrated(t *testing.T) {
	ctx := context.Background()
	for _, kind := range testdb.Kinds {
		t.Run(kind, func(t *testing.T) {
			st := testdb.Unmigrated(t, kind)
			if err := st.CheckMigrated(ctx); !errors.Is(err, store.ErrNotMigrated) || !strings.Contains(err.Error(), "pending") {
				t.Fatalf("a new database: %v, want ErrNotMigrated", err)
			}
			// The check wrote nothing: still not migrated.
			if err := st.CheckMigrated(ctx); !errors.Is(err, store.ErrNotMigrated) {
				t.Fatalf("second check: %v", err)
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if err := st.CheckMigrated(ctx); err != nil {
				t.Fatalf("after migrate: %v", err)
			}
			// One migration's record removed by hand: pending again.
			if _, err := st.DB().ExecContext(ctx, "DELETE FROM goose_db_version WHERE version_id = 1"); err != nil {
				t.Fatal(err)
			}
			if err := st.CheckMigrated(ctx); !errors.Is(err, store.ErrNotMigrated) || !strings.Contains(err.Error(), "1 of ") {
				t.Fatalf("one missing: %v", err)
			}
		})
	}
}

// A database migrated by a build whose migrations were merged out of
// number order (main at 72f0898 had 00028 and not yet 00027; at 34284cc
// 00019 before 00018) is upgraded: the lower migration it lacks is applied,
// not refused as "missing (out-of-order)" on every start (operator75).
func TestMigrateAppliesAMigrationMergedBelowTheLatest(t *testing.T) {
	ctx := context.Background()
	for _, kind := range testdb.Kinds {
		t.Run(kind, func(t *testing.T) {
			st := testdb.Unmigrated(t, kind)
			without00027(t, st) // the state 72f0898 left
			if err := st.Migrate(ctx); err != nil {
				t.Fatalf("upgrading a database that lacks 00027 below 00028: %v", err)
			}
			if err := st.CheckMigrated(ctx); err != nil {
				t.Fatalf("after the upgrade: %v", err)
			}
			var n int
			if err := st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM sys_ai_oauth_provider WHERE iss_supported = '0'").Scan(&n); err != nil {
				t.Fatalf("00027's column after the upgrade: %v", err)
			}
		})
	}
}

func TestOpenRefusesSchemeSlashes(t *testing.T) {
	for _, tt := range []struct{ dsn, hint string }{
		{"sqlite://file.db", "write sqlite:PATH without // (sqlite:blindexec.db for a file"},
		{"sqlite:///abs/file.db", "sqlite:/var/lib/blindexec.db for an absolute path"},
		// A MySQL URL is told the DSN form, not sqlite's PATH.
		{"mysql://root@tcp(h)/db", "mysql: takes a go-sql-driver DSN, not a URL: write it without //, e.g. mysql:user:pass@tcp(host:3306)/db"},
		{"mysql://root@127.0.0.1:3306/db", "not a URL"},
	} {
		_, err := store.Open(context.Background(), tt.dsn)
		if err == nil || !strings.Contains(err.Error(), tt.hint) {
			t.Errorf("%s: %v, want a refusal saying %q", tt.dsn, err, tt.hint)
		}
	}
}

// operator75: a DSN with readTimeout (docs/operations.md advises one, so
// that a dead server fails a statement instead of holding it) cut a
// migration that took longer — an ALTER TABLE waiting for a lock, or
// building an index over millions of execution records: the client gave
// up ("invalid connection"), the server finished the ALTER, goose recorded
// nothing, and every later migrate failed ("Duplicate column name"). A
// migration runs without the DSN's readTimeout.
func TestMigrateOutlastsTheDSNsReadTimeout(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.DSN(t, store.DialectMySQL)
	st := testdb.At(t, dsn)
	without00027(t, st)
	holdOAuthProviders(t, st)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	impatient := testdb.At(t, dsn+sep+"readTimeout=500ms")
	if err := impatient.Migrate(ctx); err != nil {
		t.Fatalf("a migration longer than the DSN's readTimeout: %v", err)
	}
	if err := impatient.CheckMigrated(ctx); err != nil {
		t.Fatalf("after it: %v", err)
	}
}

// operator75: serve gives each start attempt 30 s, and that deadline cut a
// migration still running (00009's index over 4 million execution
// records): the server finished the ALTER, goose recorded nothing, and every
// later attempt failed on "Duplicate column name 'trace_id'". Once the lock
// is held, a MySQL migration runs to its end whatever its caller's deadline
// (only losing the lock stops it).
func TestMigrateOutlivesItsCallersDeadline(t *testing.T) {
	ctx := context.Background()
	st := testdb.Unmigrated(t, store.DialectMySQL)
	without00027(t, st)
	holdOAuthProviders(t, st)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := st.Migrate(short); err != nil {
		t.Fatalf("a migration longer than its caller's deadline: %v", err)
	}
	if err := st.CheckMigrated(ctx); err != nil {
		t.Fatalf("after it: %v", err)
	}
}

// TestOpenWaitsForJournalModeSwitch: a process opening a fresh SQLite file
// while another one holds its write lock (as when replicas start together
// and one is switching the file to WAL) must wait for the lock, not fail.
// SQLite refuses PRAGMA journal_mode=WAL with SQLITE_BUSY without calling
// the busy handler there: the pragma reads the header under a shared lock
// and then upgrades, and a waiting upgrade could deadlock.
func TestOpenWaitsForJournalModeSwitch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fresh.db")
	// A connection in the default rollback mode, as the other process is
	// before its own switch commits.
	holder, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	ctx := t.Context()
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	const held = 300 * time.Millisecond
	released := make(chan error, 1)
	go func() {
		time.Sleep(held)
		_, err := conn.ExecContext(ctx, "COMMIT")
		released <- err
	}()
	start := time.Now()
	s, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatalf("Open while another connection held the write lock for %v: %v (after %v)", held, err, time.Since(start).Round(time.Millisecond))
	}
	defer s.Close()
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := s.DB().QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
}

// without00027 migrates st, then leaves it as a database migrated at a
// commit that had 00028 and not 00027 (72f0898): 00027's column absent,
// its version unrecorded.
func without00027(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"ALTER TABLE sys_ai_oauth_provider DROP COLUMN iss_supported",
		"DELETE FROM goose_db_version WHERE version_id = 27",
	} {
		if _, err := st.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// holdOAuthProviders keeps 00027's ALTER waiting for 2 s: a transaction
// that has read the table holds its metadata lock until it ends.
func holdOAuthProviders(t *testing.T, st *store.Store) {
	t.Helper()
	tx, err := st.DB().BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(context.Background(), "SELECT COUNT(*) FROM sys_ai_oauth_provider"); err != nil {
		t.Fatal(err)
	}
	released := time.AfterFunc(2*time.Second, func() { tx.Rollback() })
	t.Cleanup(func() { released.Stop() })
}
