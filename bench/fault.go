package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	_ "github.com/glebarez/go-sqlite" // the "sqlite" driver, for counting records
	"github.com/go-sql-driver/mysql"

	"github.com/blindexec/blindexec/internal/tcpproxy"
)

// benchFault is the fault and load runner (issue 15): `serve` as a child
// process on SQLite and on MariaDB, under load at concurrency -c, through
// a soak, upstream faults, a database outage, SIGTERM and kill -9. For each
// it prints calls answered, records written and lost (answered calls whose
// execution id is not in the database), errors logged, p99 latency and the
// engine's resident memory before and after.
func benchFault(ctx context.Context, o benchOpts) error {
	dir, err := os.MkdirTemp("", "blindexec-fault")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := buildBinary(ctx, o, dir)
	if err != nil {
		return err
	}
	up := faultUpstream()
	defer up.Close()
	fmt.Printf("fault: soak %s at concurrency %d, outage %s (MariaDB: blackholed half, refusing half; SQLite: file locked)\n\n",
		o.faultSoak, o.conc, o.faultOutage)
	for _, db := range strings.Split(o.faultDBs, ",") {
		for _, sc := range faultScenarios {
			if o.faultOnly != "" && !slices.Contains(strings.Split(o.faultOnly, ","), sc.name) {
				continue
			}
			r := &faultRun{o: o, bin: bin, dir: filepath.Join(dir, db+"-"+sc.name), up: up.URL, dbKind: db, name: sc.name}
			if err := r.setup(ctx); err != nil {
				return fmt.Errorf("%s %s: %w", db, sc.name, err)
			}
			res, err := sc.run(r, ctx)
			r.teardown()
			if err != nil {
				return fmt.Errorf("%s %s: %w", db, sc.name, err)
			}
			if res != nil { // hostile prints its own table
				res.print(db, sc.name)
			}
		}
	}
	return nil
}

var faultScenarios = []struct {
	name string
	run  func(*faultRun, context.Context) (*faultResult, error)
}{
	{"soak", (*faultRun).soak},
	{"upstream-faults", (*faultRun).upstreamFaults},
	{"db-outage", (*faultRun).outage},
	{"sigterm", (*faultRun).sigterm},
	{"kill-9", (*faultRun).kill9},
	{"hostile", (*faultRun).hostile},
}

// faultUpstream answers each fault the runner exercises, on loopback.
func faultUpstream() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true,"items":[1,2,3]}`)
		case "/reset": // a TCP reset before any answer
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0)
				}
				conn.Close()
			}
		case "/stall": // never answers; the plugin's timeout ends it
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
		case "/5xx":
			http.Error(w, "upstream overloaded", http.StatusServiceUnavailable)
		case "/slow-body": // headers at once, the body trickled over 600 ms
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"chunks":[`)
			for i := range 6 {
				time.Sleep(100 * time.Millisecond)
				fmt.Fprintf(w, "%d,", i)
				http.NewResponseController(w).Flush()
			}
			io.WriteString(w, `6]}`)
		default:
			http.NotFound(w, r)
		}
	}))
}

// faultPlugins are the catalog of a run: name → path and timeout.
var faultPlugins = []struct {
	name, path string
	timeoutMS  int
}{
	{"fault_ok", "/ok", 5000},
	{"fault_reset", "/reset", 5000},
	{"fault_stall", "/stall", 300},
	{"fault_5xx", "/5xx", 5000},
	{"fault_slow_body", "/slow-body", 5000},
	{"fault_hang", "/stall", 60000}, // outlives the drain and the shutdown grace after half a soak of up to 1m46s (sigterm checks)
}

// faultRun is one scenario on one database: its own database, spool and
// engine log.
type faultRun struct {
	o      benchOpts
	bin    string
	dir    string
	up     string
	dbKind string // sqlite or mysql
	name   string

	engineDSN string // what serve connects to (through the proxy on MariaDB)
	countDSN  string // what the runner counts records with (driver name + DSN)
	driver    string
	dbName    string // MariaDB: the database created for this run
	proxy     *tcpproxy.Proxy
	logPath   string
	eng       *engineProc
}

func (r *faultRun) setup(ctx context.Context) error {
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return err
	}
	r.logPath = filepath.Join(r.dir, "engine.log")
	switch r.dbKind {
	case "sqlite":
		file := filepath.Join(r.dir, "engine.db")
		r.engineDSN, r.driver, r.countDSN = "sqlite:"+file, "sqlite", file+"?_pragma=busy_timeout(5000)"
	case "mysql":
		cfg, err := mysql.ParseDSN(r.o.faultMySQL)
		if err != nil {
			return fmt.Errorf("-fault-mysql: %w", err)
		}
		r.dbName = "blindexec_fault_" + strings.ReplaceAll(r.name, "-", "_")
		admin := *cfg
		admin.DBName = ""
		db, err := sql.Open("mysql", admin.FormatDSN())
		if err != nil {
			return err
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+r.dbName); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, "CREATE DATABASE "+r.dbName); err != nil {
			return err
		}
		if r.proxy, err = tcpproxy.New(cfg.Addr); err != nil {
			return err
		}
		direct := *cfg
		direct.DBName, direct.ParseTime = r.dbName, true
		r.driver, r.countDSN = "mysql", direct.FormatDSN()
		viaProxy := direct
		viaProxy.Addr = r.proxy.Addr()
		r.engineDSN = "mysql:" + viaProxy.FormatDSN()
	default:
		return fmt.Errorf("-fault-db: unknown database %q (sqlite, mysql)", r.dbKind)
	}
	return nil
}

func (r *faultRun) teardown() {
	if r.eng != nil {
		r.eng.kill()
	}
	if r.proxy != nil {
		r.proxy.Close()
	}
	if r.dbName != "" {
		if cfg, err := mysql.ParseDSN(r.o.faultMySQL); err == nil {
			cfg.DBName = ""
			if db, err := sql.Open("mysql", cfg.FormatDSN()); err == nil {
				db.Exec("DROP DATABASE IF EXISTS " + r.dbName)
				db.Close()
			}
		}
	}
}

// start runs serve on the run's database and spool, and creates the
// catalog when it is new.
func (r *faultRun) start(ctx context.Context, extraEnv ...string) error {
	eng, err := startEngine(ctx, r.bin, r.engineDSN, filepath.Join(r.dir, "spool"), r.logPath, extraEnv)
	if err != nil {
		return err
	}
	r.eng = eng
	for _, p := range faultPlugins {
		doc := fmt.Sprintf(`{"name":%q,"description":"fault runner","parameters":{"type":"object"},
		  "execution":{"method":"GET","base_url":%q,"timeout_ms":%d,"retry":{"max_attempts":2,"backoff_ms":20}}}`,
			p.name, r.up+p.path, p.timeoutMS)
		status, body, err := eng.post(ctx, "/v1/plugins", faultAdminToken, doc)
		if err != nil {
			return err
		}
		if status != http.StatusCreated && status != http.StatusOK && status != http.StatusConflict {
			return fmt.Errorf("create plugin %s: HTTP %d %s", p.name, status, body)
		}
	}
	return nil
}

// faultResult is one line of the report.
type faultResult struct {
	answered   int           // calls answered with an execution id
	unanswered int           // calls that got no answer (engine gone)
	refused503 int           // answered 503 (not recorded by design)
	written    int           // answered calls whose record is in the database
	extra      int           // records of calls whose answer never arrived
	lost       int           // answered calls without a record
	recovered  int           // kill -9: records written by the restart
	logged     int           // WARN and ERROR lines in the engine's log
	p99        time.Duration // of answered calls
	firstLost  time.Time     // when the first and last lost calls were answered
	lastLost   time.Time
	rssBefore  int64 // kB
	rssAfter   int64
	notes      []string
}

func (f *faultResult) print(db, name string) {
	fmt.Printf("%-7s %-16s answered %6d  records written %6d  lost %4d  (+%d unanswered recorded, %d no answer, %d refused 503)  errors logged %4d  p99 %8s  RSS %s → %s\n",
		db, name, f.answered, f.written, f.lost, f.extra, f.unanswered, f.refused503, f.logged, round(f.p99),
		kbMB(f.rssBefore), kbMB(f.rssAfter))
	for _, n := range f.notes {
		fmt.Printf("        %s\n", n)
	}
}

func kbMB(kb int64) string { return fmt.Sprintf("%.0f MB", float64(kb)/1024) }

// steady runs the load for d with plugin choice pick, then stops the
// engine with SIGTERM and counts.
func (r *faultRun) steady(ctx context.Context, pick func(worker int) string) (*faultResult, error) {
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	before := r.eng.rss()
	l := runLoad(ctx, r.eng.base, r.o.conc, pick, r.o.faultSoak, nil)
	after := r.eng.rss()
	if err := r.eng.stop(syscall.SIGTERM, time.Minute); err != nil {
		return nil, err
	}
	return r.count(ctx, l, before, after)
}

func (r *faultRun) soak(ctx context.Context) (*faultResult, error) {
	return r.steady(ctx, func(int) string { return "fault_ok" })
}

func (r *faultRun) upstreamFaults(ctx context.Context) (*faultResult, error) {
	mix := []string{"fault_ok", "fault_reset", "fault_stall", "fault_5xx", "fault_slow_body"}
	return r.steady(ctx, func(w int) string { return mix[w%len(mix)] })
}

// outage: a quarter of the soak healthy, then the database away for
// -fault-outage (MariaDB: blackholed, then refusing; SQLite: the file
// locked by another connection), then healthy again until the soak's end.
func (r *faultRun) outage(ctx context.Context) (*faultResult, error) {
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	pre := r.o.faultSoak / 4
	post := max(r.o.faultSoak-pre-r.o.faultOutage, r.o.faultSoak/4)
	total := pre + r.o.faultOutage + post
	var phases []phase
	before := r.eng.rss()
	t0 := time.Now()
	events := func() {
		phases = append(phases, phase{"before", t0, t0.Add(pre)})
		time.Sleep(pre)
		switch r.dbKind {
		case "mysql":
			half := r.o.faultOutage / 2
			s := time.Now()
			r.proxy.Blackhole()
			time.Sleep(half)
			phases = append(phases, phase{"blackholed", s, time.Now()})
			s = time.Now()
			r.proxy.Refuse()
			time.Sleep(r.o.faultOutage - half)
			phases = append(phases, phase{"refusing", s, time.Now()})
			if err := r.proxy.Restore(); err != nil {
				fmt.Fprintln(os.Stderr, "fault: proxy: listen again:", err)
			}
		case "sqlite":
			s := time.Now()
			unlock, err := lockSQLite(ctx, r.countDSN)
			if err != nil {
				fmt.Fprintln(os.Stderr, "fault: lock the SQLite file:", err)
			}
			time.Sleep(r.o.faultOutage)
			if unlock != nil {
				unlock()
			}
			phases = append(phases, phase{"locked", s, time.Now()})
		}
		s := time.Now()
		phases = append(phases, phase{"after", s, s.Add(post)})
	}
	l := runLoad(ctx, r.eng.base, r.o.conc, func(int) string { return "fault_ok" }, total, events)
	after := r.eng.rss()
	// Give the spool the time to hand its backlog over, then stop.
	drained := r.eng.waitDrained(ctx, 2*time.Minute)
	if err := r.eng.stop(syscall.SIGTERM, time.Minute); err != nil {
		return nil, err
	}
	res, err := r.count(ctx, l, before, after)
	if err != nil {
		return nil, err
	}
	var rates []string
	var base float64
	for _, p := range phases {
		n := l.completedIn(p.from, p.to)
		rate := float64(n) / p.to.Sub(p.from).Seconds()
		if p.name == "before" {
			base = rate
		}
		rate1 := fmt.Sprintf("%s %.0f/s", p.name, rate)
		if base > 0 && p.name != "before" {
			rate1 += fmt.Sprintf(" (%.0f%%)", 100*rate/base)
		}
		rates = append(rates, rate1)
	}
	res.notes = append(res.notes, "calls answered per second: "+strings.Join(rates, ", "))
	if !drained {
		res.notes = append(res.notes, "the spool had not drained 2 min after the load")
	}
	return res, nil
}

type phase struct {
	name     string
	from, to time.Time
}

// sigterm: SIGTERM half-way through, with one worker in eight calling a
// tool that outlives the drain and the (shortened) grace after it: those
// calls must be recorded as canceled. The drain (ready75) answers the
// load on for its length after the signal: counted apart.
func (r *faultRun) sigterm(ctx context.Context) (*faultResult, error) {
	const grace, drain = 2 * time.Second, 5 * time.Second // drain: serve's default, named so the figure says it
	// A fault_hang call begun at the load's start must still be running
	// when the grace ends, or it ends by its own timeout, not canceled.
	if hang := time.Duration(faultTimeout("fault_hang")) * time.Millisecond; r.o.faultSoak/2+drain+grace >= hang {
		return nil, fmt.Errorf("-fault-soak %s: fault_hang's %s timeout ends before SIGTERM at half of it, the %s drain and the %s grace", r.o.faultSoak, hang, drain, grace)
	}
	if err := r.start(ctx, "BLINDEXEC_SHUTDOWN_GRACE_MS="+strconv.Itoa(int(grace.Milliseconds())),
		"BLINDEXEC_SHUTDOWN_DRAIN_MS="+strconv.Itoa(int(drain.Milliseconds()))); err != nil {
		return nil, err
	}
	before := r.eng.rss()
	var after int64
	var signaled time.Time
	l := runLoad(ctx, r.eng.base, r.o.conc, func(w int) string {
		if w%8 == 0 {
			return "fault_hang"
		}
		return "fault_ok"
	}, r.o.faultSoak, func() {
		time.Sleep(r.o.faultSoak / 2)
		after = r.eng.rss()
		signaled = time.Now()
		r.eng.stop(syscall.SIGTERM, time.Minute)
	})
	res, err := r.count(ctx, l, before, after)
	if err != nil {
		return nil, err
	}
	canceled, err := r.countWhere(ctx, "error_message LIKE '%shutting down%'")
	if err != nil {
		return nil, err
	}
	// Answered after the signal: within the drain (the listener still
	// open), and the last answer (the calls canceled at the grace's end).
	var drained int
	var last time.Time
	for _, at := range l.ids {
		if !at.After(signaled) {
			continue
		}
		if at.Before(signaled.Add(drain)) {
			drained++
		}
		if at.After(last) {
			last = at
		}
	}
	res.notes = append(res.notes, fmt.Sprintf("drain %s: calls answered in it after SIGTERM %d; grace %s after it; records of calls canceled at its end: %d, the last answer %s after SIGTERM",
		drain, drained, grace, canceled, last.Sub(signaled).Round(time.Millisecond)))
	return res, nil
}

// faultTimeout is the timeout (ms) of the fault plugin called name.
func faultTimeout(name string) int {
	for _, p := range faultPlugins {
		if p.name == name {
			return p.timeoutMS
		}
	}
	return 0
}

// kill9: kill -9 half-way through; count, start serve again on the same
// spool, let it drain, count again.
func (r *faultRun) kill9(ctx context.Context) (*faultResult, error) {
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	before := r.eng.rss()
	var after int64
	var killed time.Time
	l := runLoad(ctx, r.eng.base, r.o.conc, func(int) string { return "fault_ok" }, r.o.faultSoak, func() {
		time.Sleep(r.o.faultSoak / 2)
		after = r.eng.rss()
		killed = time.Now()
		r.eng.stop(syscall.SIGKILL, time.Minute)
	})
	atKill, err := r.dbIDs(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	r.eng.waitDrained(ctx, time.Minute)
	if err := r.eng.stop(syscall.SIGTERM, time.Minute); err != nil {
		return nil, err
	}
	res, err := r.count(ctx, l, before, after)
	if err != nil {
		return nil, err
	}
	res.recovered = res.written + res.extra - len(atKill)
	res.notes = append(res.notes, fmt.Sprintf("in the database at the kill: %d; written from the spool by the restart: %d", len(atKill), res.recovered))
	if res.lost > 0 {
		res.notes = append(res.notes, fmt.Sprintf("the %d lost calls were answered between %s and %s before the kill (group-commit window: 20ms)",
			res.lost, killed.Sub(res.lastLost).Round(time.Millisecond), killed.Sub(res.firstLost).Round(time.Millisecond)))
	}
	return res, nil
}

// count compares the answered calls with the records in the database.
func (r *faultRun) count(ctx context.Context, l *loadResult, rssBefore, rssAfter int64) (*faultResult, error) {
	ids, err := r.dbIDs(ctx)
	if err != nil {
		return nil, err
	}
	res := &faultResult{answered: len(l.ids), unanswered: l.unanswered, refused503: l.refused503,
		rssBefore: rssBefore, rssAfter: rssAfter, p99: l.p99()}
	for id, at := range l.ids {
		if _, ok := ids[id]; ok {
			res.written++
		} else {
			res.lost++
			if at.After(res.lastLost) {
				res.lastLost = at
			}
			if res.firstLost.IsZero() || at.Before(res.firstLost) {
				res.firstLost = at
			}
		}
	}
	res.extra = len(ids) - res.written
	var msgs map[string]int
	res.logged, msgs, err = countLogged(r.logPath)
	for _, m := range topMessages(msgs, 3) {
		res.notes = append(res.notes, fmt.Sprintf("logged %d× %q", msgs[m], m))
	}
	return res, err
}

func (r *faultRun) dbIDs(ctx context.Context) (map[string]struct{}, error) {
	db, err := sql.Open(r.driver, r.countDSN)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT execution_id FROM sys_ai_execution")
	if err != nil {
		return nil, fmt.Errorf("count records: %w", err)
	}
	defer rows.Close()
	ids := map[string]struct{}{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids[id] = struct{}{}
	}
	return ids, rows.Err()
}

func (r *faultRun) countWhere(ctx context.Context, where string) (int, error) {
	db, err := sql.Open(r.driver, r.countDSN)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sys_ai_execution WHERE "+where).Scan(&n)
	return n, err
}

// countLogged counts the WARN and ERROR lines of a JSON log, in all and
// per message.
func countLogged(path string) (int, map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	n, msgs := 0, map[string]int{}
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		var line struct{ Level, Msg string }
		if json.Unmarshal(s.Bytes(), &line) != nil || (line.Level != "WARN" && line.Level != "ERROR") {
			continue
		}
		n++
		msgs[line.Msg]++
	}
	return n, msgs, s.Err()
}

// topMessages are the k most frequent messages.
func topMessages(msgs map[string]int, k int) []string {
	keys := slices.Collect(maps.Keys(msgs))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(msgs[b]-msgs[a], strings.Compare(a, b)) })
	return keys[:min(k, len(keys))]
}

// lockSQLite holds an exclusive lock on the SQLite file until the returned
// func is called: the engine's writes wait out busy_timeout and fail.
func lockSQLite(ctx context.Context, dsn string) (func(), error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		conn.Close()
		db.Close()
		return nil, err
	}
	return func() {
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
		db.Close()
	}, nil
}

const (
	faultAdminToken   = "fault-admin"
	faultServiceToken = "fault-service"
)

// engineProc is serve running as a child process.
type engineProc struct {
	cmd    *exec.Cmd
	base   string
	client *http.Client
	exited chan struct{}
}

func startEngine(ctx context.Context, bin, db, spool, logPath string, extraEnv []string) (*engineProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"BLINDEXEC_DB="+db, "BLINDEXEC_ADDR="+addr, "BLINDEXEC_SPOOL_DIR="+spool,
		"BLINDEXEC_ADMIN_TOKEN="+faultAdminToken, "BLINDEXEC_SERVICE_TOKEN="+faultServiceToken,
		"BLINDEXEC_MASTER_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"BLINDEXEC_EGRESS_ALLOW=127.0.0.0/8", "BLINDEXEC_LOG_LEVEL=info")
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	e := &engineProc{cmd: cmd, base: "http://" + addr, exited: make(chan struct{}),
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	go func() {
		cmd.Wait()
		logf.Close()
		close(e.exited)
	}()
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := e.client.Get(e.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e, nil
			}
		}
		select {
		case <-e.exited:
			return nil, fmt.Errorf("serve exited at start; see %s", logPath)
		case <-ctx.Done():
			e.kill()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.kill()
			return nil, errors.New("serve was not ready within a minute")
		}
	}
}

func (e *engineProc) post(ctx context.Context, path, token, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// stop sends sig and waits for the exit.
func (e *engineProc) stop(sig syscall.Signal, wait time.Duration) error {
	e.cmd.Process.Signal(sig)
	select {
	case <-e.exited:
		return nil
	case <-time.After(wait):
		e.kill()
		return fmt.Errorf("serve did not exit within %s of %s", wait, sig)
	}
}

func (e *engineProc) kill() {
	select {
	case <-e.exited:
	default:
		e.cmd.Process.Kill()
		<-e.exited
	}
}

// rss is the engine's resident set in kB.
func (e *engineProc) rss() int64 { return procMemKB(e.cmd.Process.Pid, "VmRSS:") }

// waitDrained polls /metrics until the spool holds no record.
func (e *engineProc) waitDrained(ctx context.Context, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+faultAdminToken)
		if resp, err := e.client.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for line := range strings.Lines(string(b)) {
				if v, ok := strings.CutPrefix(line, "blindexec_record_spool_pending_records "); ok && strings.TrimSpace(v) == "0" {
					return true
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// loadResult is what the load generator saw.
type loadResult struct {
	mu         sync.Mutex
	ids        map[string]time.Time // execution id → when the answer came
	latencies  []time.Duration
	unanswered int
	refused503 int
}

func (l *loadResult) p99() time.Duration {
	if len(l.latencies) == 0 {
		return 0
	}
	sortDurations(l.latencies)
	return quantile(l.latencies, 0.99)
}

func (l *loadResult) completedIn(from, to time.Time) int {
	n := 0
	for _, t := range l.ids {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// runLoad calls POST /v1/execute from conc workers for d (or until the
// engine stops answering for good), while events runs beside.
func runLoad(ctx context.Context, base string, conc int, pick func(worker int) string, d time.Duration, events func()) *loadResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	l := &loadResult{ids: map[string]time.Time{}}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	var wg sync.WaitGroup
	var gone atomic.Int32 // consecutive calls without an answer
	if events != nil {
		go events()
	}
	for w := range conc {
		wg.Go(func() {
			body := fmt.Sprintf(`{"name":%q,"arguments":{}}`, pick(w))
			for ctx.Err() == nil {
				start := time.Now()
				id, status, err := execOnce(ctx, client, base, body)
				l.mu.Lock()
				switch {
				case err != nil:
					if ctx.Err() == nil {
						l.unanswered++
					}
				case status == http.StatusServiceUnavailable && id == "":
					l.refused503++
				case id != "":
					l.ids[id] = time.Now()
					l.latencies = append(l.latencies, time.Since(start))
				}
				l.mu.Unlock()
				if err != nil {
					// The engine is gone (SIGTERM, kill -9): stop once
					// it has not answered for a while.
					if gone.Add(1) > int32(20*conc) {
						return
					}
					time.Sleep(50 * time.Millisecond)
					continue
				}
				gone.Store(0)
			}
		})
	}
	wg.Wait()
	return l
}

// execOnce makes one call; id is the execution id of the answer (of the
// result, or of a refusal's details).
func execOnce(ctx context.Context, client *http.Client, base, body string) (id string, status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/execute", strings.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Authorization", "Bearer "+faultServiceToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", resp.StatusCode, err
	}
	var v struct {
		ExecutionID string `json:"execution_id"`
		Error       struct {
			Details struct {
				ExecutionID string `json:"execution_id"`
			} `json:"details"`
		} `json:"error"`
	}
	json.Unmarshal(b, &v)
	return cmp.Or(v.ExecutionID, v.Error.Details.ExecutionID), resp.StatusCode, nil
}

// hostile: issue 13's and issue 30's attacks on serve, a burst of each from -c workers:
// the CPU the engine spent per request (utime+stime of the process) and
// its resident memory before, at its peak during the burst and after,
// beside an ordinary call. The MCP inputSchemas are met by re-importing a
// loopback MCP server that lists one such tool, beside one listing an
// ordinary tool.
func (r *faultRun) hostile(ctx context.Context) (*faultResult, error) {
	// The limit per user at the concurrency, so that the workers of user
	// 7 are not refused; user 9's calls are held at it.
	limit := r.o.conc
	const bodyDeadline = 2 * time.Second // shortened, so that slow bodies are cut within the burst
	// Issue 30: a model that answers too much.
	llm := hostileLLM()
	defer llm.Close()
	if err := r.start(ctx, "BLINDEXEC_MAX_CONCURRENT_PER_USER="+strconv.Itoa(limit), "BLINDEXEC_MAX_RUNS_PER_USER="+strconv.Itoa(limit),
		"BLINDEXEC_BODY_TIMEOUT_MS="+strconv.Itoa(int(bodyDeadline.Milliseconds())), "BLINDEXEC_LLM_BASE_URL="+llm.URL+"/v1"); err != nil {
		return nil, err
	}
	// A tool taking a string argument, as seed 001's search does.
	doc := `{"name":"fault_search","description":"search","parameters":{"type":"object","properties":{"keyword":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"` + r.up + `/ok","param_placement":"query"}}`
	if status, body, err := r.eng.post(ctx, "/v1/plugins", faultAdminToken, doc); err != nil || status != http.StatusCreated {
		return nil, fmt.Errorf("create fault_search: HTTP %d %s %v", status, body, err)
	}
	// User 9's calls in flight at the limit: the 429 attack.
	holdCtx, release := context.WithCancel(ctx)
	defer release()
	holder := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: limit}}
	for range limit {
		go execOnce(holdCtx, holder, r.eng.base, `{"name":"fault_hang","user_id":9,"arguments":{}}`)
	}
	mcpUp := hostileMCPUpstream()
	defer mcpUp.Close()

	type attack struct {
		name    string
		n       int
		send    func(context.Context) error
		workers int // 0: -c
	}
	var attacks []attack
	target := hostileTarget{tool: "fault_search", user: 7, heldUser: 9, limit: limit, upstream: r.up}
	reqs := append(hostileRequests(target), hostileRequest{
		name: "/v1/execute, inline plugin, path value %2e%2e (422)", n: 300, path: "/v1/execute", status: http.StatusUnprocessableEntity,
		body: `{"plugin":{"name":"repo","description":"d","parameters":{"type":"object","properties":{"id":{"type":"string"}}},
		  "execution":{"method":"GET","base_url":"` + r.up + `/users/{id}"}},"arguments":{"id":"%2e%2e"}}`,
	})
	reqs = append(reqs, hostileRequests30(target)...)
	// The console's sign-in answers with a redirect: its status is the answer.
	client := &http.Client{Transport: r.eng.client.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, h := range reqs {
		attacks = append(attacks, attack{name: h.name, n: 4 * h.n, send: func(ctx context.Context) error {
			return h.send(ctx, client, r.eng.base, faultServiceToken)
		}})
	}
	const slow = 500
	attacks = append(attacks, attack{name: fmt.Sprintf("%d connections, a body byte every 100 ms (cut at the %s body deadline)", slow, bodyDeadline),
		n: slow, workers: slow, send: func(context.Context) error {
			c, err := net.Dial("tcp", strings.TrimPrefix(r.eng.base, "http://"))
			if err != nil {
				return err
			}
			t0 := time.Now()
			slowBody(c, faultServiceToken)
			if d := time.Since(t0); d > 2*bodyDeadline {
				return fmt.Errorf("a slow body held its connection %s", d.Round(time.Millisecond))
			}
			return nil
		}})
	mcpNames := []string{"reference: MCP re-import, one ordinary tool (200)"}
	for _, sc := range hostileSchemas() {
		mcpNames = append(mcpNames, "MCP re-import, inputSchema "+sc.name+" (tool refused)")
	}
	for i, name := range mcpNames {
		url := fmt.Sprintf("%s/mcp/%d", mcpUp.URL, i)
		status, body, err := r.eng.post(ctx, "/v1/plugins/import/mcp", faultAdminToken, fmt.Sprintf(`{"url":%q,"name":"hostile_%d"}`, url, i))
		if err != nil || status != http.StatusOK {
			return nil, fmt.Errorf("register the MCP server %s: HTTP %d %s %v", url, status, body, err)
		}
		reimport := fmt.Sprintf(`{"server":"hostile_%d"}`, i)
		wantFailed := i > 0
		attacks = append(attacks, attack{name: name, n: 200, send: func(ctx context.Context) error {
			status, body, err := r.eng.post(ctx, "/v1/plugins/import/mcp", faultAdminToken, reimport)
			if err != nil {
				return err
			}
			var rep struct{ Failed []struct{} }
			json.Unmarshal(body, &rep)
			if status != http.StatusOK || (len(rep.Failed) > 0) != wantFailed {
				return fmt.Errorf("HTTP %d, %d tools refused: %.300s", status, len(rep.Failed), body)
			}
			return nil
		}})
	}

	pid := r.eng.cmd.Process.Pid
	fmt.Printf("%s: hostile input against serve (pid %d), %d workers; CPU of the engine process per request, its RSS before, at its peak during the burst, after\n",
		r.dbKind, pid, r.o.conc)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "attack\tn\tCPU per request\tRSS before\tpeak\tafter\t\n")
	for _, a := range attacks {
		if err := retryUntil(ctx, 10*time.Second, a.send); err != nil { // warm-up, and the answer checked
			return nil, fmt.Errorf("%s: %w", a.name, err)
		}
		os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) // reset the peak (VmHWM)
		before := procMemKB(pid, "VmRSS:")
		cpu0 := procCPU(pid)
		var next atomic.Int64
		var failed atomic.Pointer[error]
		var wg sync.WaitGroup
		for range min(cmp.Or(a.workers, r.o.conc), a.n) {
			wg.Go(func() {
				for next.Add(1) <= int64(a.n) {
					if err := a.send(ctx); err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := failed.Load(); err != nil {
			return nil, fmt.Errorf("%s: %w", a.name, *err)
		}
		cpu := (procCPU(pid) - cpu0) / time.Duration(a.n)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", a.name, a.n, round(cpu),
			kbMB(before), kbMB(procMemKB(pid, "VmHWM:")), kbMB(procMemKB(pid, "VmRSS:")))
	}
	tw.Flush()
	release()
	return nil, r.eng.stop(syscall.SIGTERM, time.Minute)
}

// retryUntil calls f until it succeeds or d passes (the held calls of the
// 429 attack take a moment to start); the last error is returned.
func retryUntil(ctx context.Context, d time.Duration, f func(context.Context) error) error {
	deadline := time.Now().Add(d)
	for {
		err := f(ctx)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procCPU is the user and system CPU time of process pid so far, from
// /proc/<pid>/stat (in clock ticks of 10 ms: USER_HZ is 100 on Linux).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procMemKB is a kB field of /proc/<pid>/status (VmRSS:, VmHWM:).
func procMemKB(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// hostileMCPUpstream is an MCP server over streamable HTTP (JSON answers)
// at /mcp/0, listing one ordinary tool, and at /mcp/1, /mcp/2…, listing
// one tool with each of hostileSchemas' inputSchemas.
func hostileMCPUpstream() *httptest.Server {
	schemas := []map[string]any{{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}
	for _, sc := range hostileSchemas() {
		schemas = append(schemas, sc.schema)
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/mcp/"))
		if err != nil || i < 0 || i >= len(schemas) {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.ID == nil { // a notification
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result any = map[string]any{}
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": req.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "hostile", "version": "1"}}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{"name": "tool", "description": "d", "inputSchema": schemas[i]}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}))
}
