package console_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/console"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/questions"
	"github.com/blindexec/blindexec/internal/logbuf"
	"github.com/blindexec/blindexec/store"
)

const adminToken = "admin-console-token"

// env is one engine with its console, served over HTTP as serve does.
type env struct {
	t       *testing.T
	st      *store.Store
	url     string
	console *console.Console
	master  string
	logs    *logbuf.Buffer
	reg     *prometheus.Registry
	// changes is the server's watcher, polled by the API's own writes and
	// by tests.
	changes *store.Watcher
}

func newMasterKey() string {
	key := make([]byte, 32)
	rand.Read(key)
	return base64.StdEncoding.EncodeToString(key)
}

// newEnv serves an engine over st; master is the master key (several
// replicas share one); opts, a func(*api.Server) or a func(*console.Console),
// set the server up before the console is made, or the console before it
// serves.
func newEnv(t *testing.T, st *store.Store, master string, opts ...any) *env {
	t.Helper()
	kr, err := auth.ParseKeyring(master, "")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logbuf.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	reg := prometheus.NewRegistry()
	creds := auth.NewCredentialService(st, kr)
	changes := store.NewWatcher(st, time.Hour, log)
	changes.Poll(context.Background())
	creds.Changes = changes
	served := catalog.New(st, changes, log)
	rules := auth.NewCatalog(st, served, changes)
	creds.Identifiers = rules
	ex := engine.NewExecutor(egresstest.Client(t))
	ex.Credentials, ex.Logger, ex.Catalog = creds, log, rules
	ex.Answers = &questions.Inbox{Store: st}
	ex.Recorder = engine.NewRecorder(api.StoreSink{Store: st}, engine.RecorderOptions{Logger: log})
	mcp := enginemcp.NewManager(st, egresstest.Client(t))
	t.Cleanup(func() { mcp.Close() })
	enginemcp.Invoker{Manager: mcp}.RegisterOn(ex)
	srv := &api.Server{Store: st, Catalog: served, Creds: creds, Executor: ex, AdminToken: adminToken, Logger: log,
		HTTPClient: egresstest.Client(t), Changes: changes, MCP: &api.MCPConfig{Manager: mcp}, Registry: reg}
	for _, o := range opts {
		if o, ok := o.(func(*api.Server)); ok {
			o(srv)
		}
	}
	con, err := console.New(srv, st, master, log)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		if o, ok := o.(func(*console.Console)); ok {
			o(con)
		}
	}
	hs := httptest.NewServer(con.Handler(srv.Handler()))
	t.Cleanup(hs.Close)
	return &env{t: t, st: st, url: hs.URL, console: con, master: master, logs: logs, reg: reg, changes: changes}
}

// client is a browser stand-in: a cookie jar, no redirects followed.
func (e *env) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signIn posts tok to the sign-in form as the console page does.
func (e *env) signIn(c *http.Client, tok string) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.url+"/console/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.url)
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}
