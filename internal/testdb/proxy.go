package testdb

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// Proxy is a loopback TCP proxy in front of a test's MySQL database that
// a test can blackhole: connections stay open and new ones are accepted,
// but nothing goes through, as a database behind a network partition (no
// error, no answer).
type Proxy struct {
	holed atomic.Bool
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// Proxied returns a proxy and the DSN (of DSN's "mysql:" form) that
// reaches dsn's database through it; both end with t.
func Proxied(t testing.TB, dsn string) (*Proxy, string) {
	t.Helper()
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	if err != nil {
		t.Fatalf("testdb: proxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testdb: proxy: %v", err)
	}
	p := &Proxy{conns: map[net.Conn]struct{}{}}
	target := cfg.Addr
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for c := range p.conns {
			c.Close()
		}
		p.conns = nil
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c, target)
		}
	}()
	cfg.Addr = ln.Addr().String()
	return p, "mysql:" + cfg.FormatDSN()
}

// Blackhole stops forwarding, both ways, on every connection open and
// to come.
func (p *Proxy) Blackhole() { p.holed.Store(true) }

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) pipe(c net.Conn, target string) {
	defer c.Close()
	if !p.track(c) {
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	if !p.track(up) {
		return
	}
	done := make(chan struct{}, 2)
	forward := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && !p.holed.Load() {
				if _, err := dst.Write(buf[:n]); err != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go forward(up, c)
	go forward(c, up)
	<-done
}
