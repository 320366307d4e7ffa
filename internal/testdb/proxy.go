package testdb

import (
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/blindexec/blindexec/internal/tcpproxy"
	"github.com/blindexec/blindexec/store"
)

// Proxied returns a loopback proxy in front of dsn's database, which the
// test can blackhole (a network partition: no error, no answer) or make
// refuse, and the DSN (of DSN's "mysql:" form) that reaches the database
// through it; both end with t.
func Proxied(t testing.TB, dsn string) (*tcpproxy.Proxy, string) {
	t.Helper()
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	if err != nil {
		t.Fatalf("testdb: proxy: %v", err)
	}
	p, err := tcpproxy.New(cfg.Addr)
	if err != nil {
		t.Fatalf("testdb: proxy: %v", err)
	}
	t.Cleanup(p.Close)
	cfg.Addr = p.Addr()
	return p, "mysql:" + cfg.FormatDSN()
}

// Blackholable is a migrated MySQL database of the test's own, reached
// directly (the store returned: what the test writes and reads past the
// partition) and through Proxied's proxy (the DSN returned: what the code
// under test opens), for a test that blackholes the one path only.
func Blackholable(t testing.TB) (direct *store.Store, proxy *tcpproxy.Proxy, through string) {
	t.Helper()
	dsn := DSN(t, store.DialectMySQL)
	direct = At(t, dsn)
	if err := direct.Migrate(t.Context()); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	proxy, through = Proxied(t, dsn)
	return direct, proxy, through
}
