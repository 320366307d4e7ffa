package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// benchChanges measures what following the change counters costs a
// replica and its database: one poll of the counters, the queries per
// second an idle replica sends (its audits included), a catalog reload per
// 1,000 plugins, and one audit of the counters.
// SQLite always; MariaDB/MySQL when BLINDEXEC_TEST_MYSQL_DSN names a server.
func benchChanges(ctx context.Context, o benchOpts) error {
	return withTB(func(tb *benchTB) error {
		dir, err := os.MkdirTemp("", "blindexec-bench-changes")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dsns := [][2]string{{"sqlite", "sqlite:" + filepath.Join(dir, "changes.db")}}
		if os.Getenv(testdb.EnvMySQLDSN) != "" {
			dsns = append(dsns, [2]string{"mariadb", testdb.DSN(tb, store.DialectMySQL)})
		} else {
			fmt.Printf("changes: %s unset: MariaDB figures skipped\n", testdb.EnvMySQLDSN)
		}
		fmt.Println("changes: following the change counters (1 poll per BLINDEXEC_CHANGE_POLL_MS, default 1000)")
		fmt.Printf("%-8s %12s %12s %18s %18s %16s %22s\n", "database", "poll p50", "poll p99", "idle queries/s", "reload/1000", "heap/1000", "audit p50/p99 (5000)")
		for _, d := range dsns {
			st, err := store.Open(ctx, d[1])
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.Migrate(ctx); err != nil {
				return err
			}
			// The poll: the one query a replica makes per interval.
			lat, err := latency(ctx, subject{name: "poll", call: func(ctx context.Context) error {
				_, err := st.Versions(ctx)
				return err
			}}, o.n)
			if err != nil {
				return err
			}
			sortDurations(lat)
			qps := "-"
			if d[0] == "mariadb" {
				q, err := idleQueries(ctx, d[1], 10*time.Second)
				if err != nil {
					return err
				}
				qps = fmt.Sprintf("%.2f", q)
			}
			reload, heap, err := reloadCost(ctx, st, 5000)
			if err != nil {
				return err
			}
			// An audit (every BLINDEXEC_CHANGE_AUDIT_POLLS polls, and when
			// a counter moves): the counters, a fingerprint scan of each
			// followed table (5,000 plugins by now) and the trigger list.
			audit, err := latency(ctx, subject{name: "audit", call: func(ctx context.Context) error {
				_, err := st.AuditChanges(ctx)
				return err
			}}, min(o.n, 200))
			if err != nil {
				return err
			}
			sortDurations(audit)
			fmt.Printf("%-8s %12s %12s %18s %18s %16s %22s\n", d[0], round(quantile(lat, 0.5)), round(quantile(lat, 0.99)), qps, round(reload),
				fmt.Sprintf("%.2f MB", float64(heap)/(1<<20)), fmt.Sprintf("%v / %v", round(quantile(audit, 0.5)), round(quantile(audit, 0.99))))
		}
		fmt.Println()
		return nil
	})
}

// idleQueries is the queries per second an idle replica's watcher sends
// at the default poll interval, counted by a loopback proxy in front of the
// server (commands the client starts: COM_QUERY and COM_STMT_EXECUTE), so
// that other clients of a shared server do not count.
func idleQueries(ctx context.Context, dsn string, dur time.Duration) (float64, error) {
	cfg, err := mysqldrv.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	if err != nil {
		return 0, err
	}
	var commands atomic.Int64
	addr, stop, err := countingProxy(cfg.Addr, &commands)
	if err != nil {
		return 0, err
	}
	defer stop()
	cfg.Addr = addr
	st, err := store.Open(ctx, "mysql:"+cfg.FormatDSN())
	if err != nil {
		return 0, err
	}
	defer st.Close()
	w := store.NewWatcher(st, time.Second, nil)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go w.Run(wctx)
	time.Sleep(time.Second) // the first poll's connection is set up
	before := commands.Load()
	time.Sleep(dur)
	return float64(commands.Load()-before) / dur.Seconds(), nil
}

// countingProxy listens on loopback in front of the MariaDB server at
// upstream, counting in commands what its clients send (relayCounting),
// and returns its address and how to stop listening.
func countingProxy(upstream string, commands *atomic.Int64) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relayCounting(c, upstream, commands)
		}
	}()
	return ln.Addr().String(), func() { ln.Close() }, nil
}

// relayCounting relays one client connection to the server at addr and
// counts the commands the client starts (packets with sequence number 0
// whose first byte is COM_QUERY or COM_STMT_EXECUTE).
func relayCounting(client net.Conn, addr string, commands *atomic.Int64) {
	defer client.Close()
	server, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer server.Close()
	go io.Copy(client, server)
	r := bufio.NewReader(client)
	head := make([]byte, 4)
	for {
		if _, err := io.ReadFull(r, head); err != nil {
			return
		}
		n := int(head[0]) | int(head[1])<<8 | int(head[2])<<16
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		const comQuery, comStmtExecute = 0x03, 0x17
		if head[3] == 0 && n > 0 && (body[0] == comQuery || body[0] == comStmtExecute) {
			commands.Add(1)
		}
		if _, err := server.Write(append(head, body...)); err != nil {
			return
		}
	}
}

// reloadCost times a catalog reload of n plugins (GitHub-sized rows: a few
// parameters each) and the heap the loaded catalog holds.
func reloadCost(ctx context.Context, st *store.Store, n int) (time.Duration, uint64, error) {
	params := store.JSON(`{"type":"object","properties":{"owner":{"type":"string","description":"The account owner of the repository."},"repo":{"type":"string","description":"The name of the repository."},"per_page":{"type":"integer","default":30},"page":{"type":"integer","default":1}},"required":["owner","repo"]}`)
	cfg := store.JSON(`{"execution":{"type":"http","method":"GET","base_url":"https://api.github.com/repos/{owner}/{repo}/issues"},"auth_config":{"type":"bearer","token":"GITHUB_TOKEN"}}`)
	for i := range n {
		p := &store.Plugin{Name: fmt.Sprintf("reload_%04d", i), Title: "List repository issues",
			Description: "List issues in a repository. Only open issues will be listed.", ParameterSchema: params, ExecutionConfig: cfg}
		if err := st.CreatePlugin(ctx, p); err != nil {
			return 0, 0, err
		}
	}
	w := store.NewWatcher(st, time.Hour, nil)
	if _, err := w.Poll(ctx); err != nil {
		return 0, 0, err
	}
	// A first load warms the driver's and the store's own caches, so that
	// the second measures the catalog alone.
	if _, err := catalog.New(st, w, nil).EnabledPlugins(ctx); err != nil {
		return 0, 0, err
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	c := catalog.New(st, w, nil)
	t0 := time.Now()
	ps, err := c.EnabledPlugins(ctx)
	took := time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(c)
	if len(ps) < n {
		return 0, 0, fmt.Errorf("reload loaded %d plugins, want %d", len(ps), n)
	}
	return took * 1000 / time.Duration(n), (m1.HeapAlloc - min(m0.HeapAlloc, m1.HeapAlloc)) * 1000 / uint64(n), nil
}
