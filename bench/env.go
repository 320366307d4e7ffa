package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/recordspool"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// benchTB lets the runner use the repository's test servers
// (internal/openaitest, engine/mcp/mcptest), which take a testing.TB.
// Those use Helper, Cleanup and Errorf/Fatalf only; any other method
// panics on the nil embedded interface, which would be a bug to fix here.
type benchTB struct {
	testing.TB

	mu       sync.Mutex
	cleanups []func()
	errs     []string
}

func (t *benchTB) Helper()      {}
func (t *benchTB) Name() string { return "bench" }

func (t *benchTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *benchTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, fmt.Sprintf(format, args...))
}

func (t *benchTB) Error(args ...any)   { t.Errorf("%s", fmt.Sprint(args...)) }
func (t *benchTB) Logf(string, ...any) {}
func (t *benchTB) Log(...any)          {}

// Fatalf records the error and panics: a test helper failing in the runner
// is a broken setup, and the group's recover reports it.
func (t *benchTB) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic(fmt.Sprintf("bench setup: "+format, args...))
}
func (t *benchTB) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }

// err is the first error recorded, if any.
func (t *benchTB) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s (%d errors)", t.errs[0], len(t.errs))
}

// close runs the cleanups, last registered first.
func (t *benchTB) close() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// withTB runs a group that uses test helpers (openaitest, mcptest) with a
// benchTB: its cleanups run at the end, and a Fatalf (a panic here) or an
// Errorf becomes the group's error.
func withTB(run func(tb *benchTB) error) (err error) {
	tb := &benchTB{}
	defer tb.close()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
		if err == nil {
			err = tb.err()
		}
	}()
	return run(tb)
}

// directRecords writes execution records straight to the store, without
// the spool (-direct-records: the spool's cost, by difference).
var directRecords bool

// env is the engine as the exec, loop and mcp groups run it: an SQLite
// store in a temporary directory, the credential vault with user 7's
// credentials, execution records written to the store through a record
// spool, and an executor
// whose HTTP client can reach loopback only.
type env struct {
	dsn     string // the store's, as BLINDEXEC_DB takes it
	key     string // the master key, base64, as BLINDEXEC_MASTER_KEY takes it
	dir     string // a temporary directory removed by close
	st      *store.Store
	creds   *auth.CredentialService
	changes *store.Watcher // polled only by hand: the bench writes through the store
	policy  *egress.Policy
	ex      *engine.Executor
	closers []func()
}

// newEnv builds an env on SQLite; wrap, when not nil, wraps the executor's
// HTTP transport (to time the upstream calls).
func newEnv(ctx context.Context, wrap func(http.RoundTripper) http.RoundTripper) (_ *env, err error) {
	return newEnvOn(ctx, "", wrap)
}

// newEnvOn builds an env on the database dsn (as BLINDEXEC_DB takes it; a
// MariaDB database the caller created), or on SQLite in the env's
// temporary directory when dsn is empty.
func newEnvOn(ctx context.Context, dsn string, wrap func(http.RoundTripper) http.RoundTripper) (_ *env, err error) {
	e := &env{}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	dir, err := os.MkdirTemp("", "blindexec-bench")
	if err != nil {
		return nil, err
	}
	e.dir = dir
	e.closers = append(e.closers, func() { os.RemoveAll(dir) })
	e.dsn = cmp.Or(dsn, "sqlite:"+filepath.Join(dir, "bench.db"))
	if e.st, err = store.Open(ctx, e.dsn); err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() { e.st.Close() })
	if err := e.st.Migrate(ctx); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	e.key = base64.StdEncoding.EncodeToString(key)
	kr, err := auth.ParseKeyring(e.key, "")
	if err != nil {
		return nil, err
	}
	e.creds = auth.NewCredentialService(e.st, kr)
	e.changes = store.NewWatcher(e.st, time.Second, nil)
	e.creds.Changes = e.changes
	if e.policy, err = egress.ParsePolicy("127.0.0.0/8"); err != nil {
		return nil, err
	}
	var rec *engine.Recorder
	if directRecords {
		rec = engine.NewRecorder(api.StoreSink{Store: e.st}, engine.RecorderOptions{})
		e.closers = append(e.closers, func() { rec.Close(context.Background()) })
	} else {
		// Records go through the spool, as under serve (its default window).
		sp, err := recordspool.Open(filepath.Join(dir, "spool"), api.StoreSink{Store: e.st}, recordspool.Options{})
		if err != nil {
			return nil, err
		}
		rec = engine.NewRecorder(sp, engine.RecorderOptions{FlushInterval: 20 * time.Millisecond, InFlight: 4})
		e.closers = append(e.closers, func() {
			rec.Close(context.Background())
			sp.Close(context.Background())
		})
	}
	client := e.client()
	if wrap != nil {
		client.Transport = wrap(client.Transport)
	}
	e.ex = engine.NewExecutor(client)
	e.ex.Credentials, e.ex.Recorder = e.creds, rec
	// As serve: the credential rules' view of the catalog, and metrics.
	rules := auth.NewCatalog(e.st, catalog.New(e.st, e.changes, nil), e.changes)
	e.ex.Catalog, e.creds.Identifiers = rules, rules
	if e.ex.Metrics, err = engine.NewMetrics(prometheus.NewRegistry()); err != nil {
		return nil, err
	}
	return e, nil
}

// client is a new egress-guarded client allowing loopback only.
func (e *env) client() *http.Client {
	return egress.NewClient(&egress.Dialer{Policy: e.policy})
}

func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

// procStatus reads fields of /proc/self/status in kB (VmHWM, VmRSS).
func procStatus(fields ...string) map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return out
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		for _, f := range fields {
			if k == f {
				n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				out[k] = n
			}
		}
	}
	return out
}

// mb formats bytes as MB.
func mb(b uint64) string { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }

// addPlugin stores the plugin document doc and polls the change counters,
// so that the API serves it at once.
func (e *env) addPlugin(ctx context.Context, doc string) (*plugins.Plugin, error) {
	p, err := plugins.Parse([]byte(doc))
	if err != nil {
		return nil, err
	}
	row, err := catalog.RowFromPlugin(p)
	if err != nil {
		return nil, err
	}
	if err := e.st.CreatePlugin(ctx, row); err != nil {
		return nil, err
	}
	if _, err := e.changes.Poll(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// addCompanyPlugin stores seed 001's plugin aimed at url, and user's
// QCC_KEY to call it with.
func (e *env) addCompanyPlugin(ctx context.Context, url string, user int64, key string) (*plugins.Plugin, error) {
	if err := e.creds.Set(ctx, user, "QCC_KEY", key, "bench"); err != nil {
		return nil, err
	}
	return e.addPlugin(ctx, companyPlugin(url))
}

// buildBinary builds cmd/blindexec into dir, for the groups that run it as
// a child process.
func buildBinary(ctx context.Context, o benchOpts, dir string) (string, error) {
	return goBuild(ctx, o, dir, "./cmd/blindexec")
}

// buildRelay builds the bare MCP relays' stdio program (bench/mcprelay):
// a binary of its own, so that its memory is a relay's, not the runner's.
func buildRelay(ctx context.Context, o benchOpts, dir string) (string, error) {
	return goBuild(ctx, o, dir, "./bench/mcprelay/cmd/mcprelay")
}

// goBuild builds the program pkg into dir under its last path element.
func goBuild(ctx context.Context, o benchOpts, dir, pkg string) (string, error) {
	name := path.Base(pkg)
	bin := filepath.Join(dir, name)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	build.Dir, build.Stdout, build.Stderr = o.root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build %s: %w", name, err)
	}
	return bin, nil
}
