package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/store"
)

// recorder captures Fatalf and Skipf so that their effect on a test can be
// checked; everything else goes to the real test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// openRecorded runs Open in a goroutine of its own, as Fatalf and Skipf
// end the calling goroutine.
func openRecorded(t *testing.T, kind string) *recorder {
	r := &recorder{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() { Open(r, kind) })
	wg.Wait()
	return r
}

func TestOpenOutcomes(t *testing.T) {
	tests := []struct {
		name      string
		kind      string
		dsn       string
		wantFatal string
		wantSkip  string
	}{
		{"mysql without a server configured skips", "mysql", "", "", "set " + EnvMySQLDSN},
		{"unreachable mysql server fails", "mysql", "root@tcp(127.0.0.1:1)/test?timeout=2s", "unreachable", ""},
		{"malformed mysql DSN fails", "mysql", "not a dsn", EnvMySQLDSN, ""},
		{"unknown kind fails", "postgres", "", "unknown database kind", ""},
		{"sqlite opens", "sqlite", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvMySQLDSN, tt.dsn)
			r := openRecorded(t, tt.kind)
			if (tt.wantFatal == "") != (r.fatal == "") || !strings.Contains(r.fatal, tt.wantFatal) {
				t.Errorf("Fatalf message %q, want one containing %q", r.fatal, tt.wantFatal)
			}
			if (tt.wantSkip == "") != (r.skip == "") || !strings.Contains(r.skip, tt.wantSkip) {
				t.Errorf("Skipf message %q, want one containing %q", r.skip, tt.wantSkip)
			}
		})
	}
}

func TestEachIsolatesAndCleansUp(t *testing.T) {
	var mysqlDB string
	Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		// Each store starts empty, whatever other tests wrote.
		var n int
		if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM sys_ai_plugin").Scan(&n); err != nil || n != 0 {
			t.Fatalf("fresh store has %d plugins (%v)", n, err)
		}
		if err := s.CreatePlugin(ctx, &store.Plugin{Name: "p"}); err != nil {
			t.Fatal(err)
		}
		if s.Dialect() == store.DialectMySQL {
			if err := s.DB().QueryRowContext(ctx, "SELECT DATABASE()").Scan(&mysqlDB); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(mysqlDB, "bx_") {
				t.Errorf("test database %q, want bx_<hex>", mysqlDB)
			}
		}
	})
	if mysqlDB == "" {
		return // mysql subtest skipped
	}
	admin, err := sql.Open("mysql", os.Getenv(EnvMySQLDSN))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var found string
	err = admin.QueryRow("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", mysqlDB).Scan(&found)
	if err != sql.ErrNoRows {
		t.Errorf("database %s still exists after the test (%q, %v)", mysqlDB, found, err)
	}
}
