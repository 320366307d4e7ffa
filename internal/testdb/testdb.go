// Package testdb gives each test a migrated store of its own, on SQLite and
// on a real MySQL/MariaDB server, so that database tests run against both
// and packages can run in parallel.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/blindexec/blindexec/store"
)

// EnvChangeDetection, set to poll, makes every MySQL store these helpers
// open detect changes without triggers (store.ChangePoll): CI's second
// pass over the packages that touch the database.
const EnvChangeDetection = "BLINDEXEC_TEST_CHANGE_DETECTION"

// Polled reports a run in poll mode (EnvChangeDetection).
func Polled() bool { return os.Getenv(EnvChangeDetection) == store.ChangePoll }

// setMode puts s in the change detection of the run.
func setMode(t testing.TB, s *store.Store) {
	t.Helper()
	if Polled() && s.Dialect() == store.DialectMySQL {
		if err := s.SetChangeDetection(store.ChangePoll); err != nil {
			t.Fatalf("testdb: %v", err)
		}
	}
}

// EnvMySQLDSN names the go-sql-driver DSN of the MySQL/MariaDB server the
// mysql tests use, e.g. root@tcp(127.0.0.1:3306)/test.
const EnvMySQLDSN = "BLINDEXEC_TEST_MYSQL_DSN"

// Kinds are the database kinds Open accepts, in the order Each runs them
// (for benchmarks and tests that run their own subtests).
var Kinds = []string{store.DialectSQLite, store.DialectMySQL}

// Each runs fn as the subtests "sqlite" and "mysql", each on a fresh store.
func Each(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	EachKind(t, func(t *testing.T, kind string) { fn(t, Open(t, kind)) })
}

// EachKind runs fn as the subtests "sqlite" and "mysql", for tests that
// open their databases themselves (with DSN).
func EachKind(t *testing.T, fn func(t *testing.T, kind string)) {
	t.Helper()
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) { fn(t, kind) })
	}
}

// EachB runs fn as the sub-benchmarks "sqlite" and "mysql", each on a
// fresh store.
func EachB(b *testing.B, fn func(b *testing.B, s *store.Store)) {
	b.Helper()
	for _, kind := range Kinds {
		b.Run(kind, func(b *testing.B) { fn(b, Open(b, kind)) })
	}
}

// DSN returns the store DSN of a new, empty, unmigrated database that t
// cleans up. kind "sqlite" uses a file in t.TempDir(). kind "mysql" creates
// a database bx_<random hex> on the server named by BLINDEXEC_TEST_MYSQL_DSN,
// and drops it afterwards; the test is skipped when the variable is unset,
// and fails when the server is unreachable.
func DSN(t testing.TB, kind string) string {
	t.Helper()
	switch kind {
	case store.DialectSQLite:
		return "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	case store.DialectMySQL:
		return "mysql:" + createMySQLDatabase(t)
	}
	t.Fatalf("testdb: unknown database kind %q (want sqlite or mysql)", kind)
	return ""
}

// Open returns a migrated store on a database from DSN.
func Open(t testing.TB, kind string) *store.Store {
	t.Helper()
	s := Unmigrated(t, kind)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return s
}

// Unmigrated is Open without the migrations: an empty database, for tests
// of what happens before `blindexec migrate`.
func Unmigrated(t testing.TB, kind string) *store.Store {
	t.Helper()
	return At(t, DSN(t, kind))
}

// At opens a store on dsn (from DSN: another replica's connection to a
// test's database), in the run's change detection, closed when t ends.
func At(t testing.TB, dsn string) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	setMode(t, s)
	return s
}

// createMySQLDatabase creates a uniquely named database, schedules its drop
// and returns the DSN that reaches it.
func createMySQLDatabase(t testing.TB) string {
	t.Helper()
	server := os.Getenv(EnvMySQLDSN)
	if server == "" {
		t.Skipf("no MySQL server: set %s, e.g. %s='root@tcp(127.0.0.1:3306)/test'", EnvMySQLDSN, EnvMySQLDSN)
	}
	cfg, err := mysql.ParseDSN(server)
	if err != nil {
		t.Fatalf("testdb: %s: %v", EnvMySQLDSN, err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("testdb: %s: %v", EnvMySQLDSN, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		admin.Close()
		t.Fatalf("testdb: MySQL server at %s (from %s) unreachable: %v", cfg.Addr, EnvMySQLDSN, err)
	}

	var suffix [6]byte
	rand.Read(suffix[:])
	name := "bx_" + hex.EncodeToString(suffix[:])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		admin.Close()
		t.Fatalf("testdb: create database %s: %v", name, err)
	}
	// Registered before the store's Close, so it runs after it.
	t.Cleanup(func() {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("testdb: drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// NoWait opens a second store on the MySQL database of dsn (from DSN, and
// migrated) whose row lock waits fail at once with error 1205 (MariaDB
// accepts a zero innodb_lock_wait_timeout). It meets every concurrent
// write of a row as a conflict, as a Galera node meets a write another
// node certified first (error 1213 at commit): the conflict paths run on
// one server, deterministically.
func NoWait(t testing.TB, dsn string) *store.Store {
	t.Helper()
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return At(t, dsn+sep+"innodb_lock_wait_timeout=0")
}
