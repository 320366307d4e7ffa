package testdb

import (
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/blindexec/blindexec/internal/tcpproxy"
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
