package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// Issue 15, point 3: on SIGTERM a call that outlives the grace is
// canceled, and its record reaches the database, saying why, before
// serve returns.
func TestShutdownRecordsCallsCanceledAfterTheGrace(t *testing.T) {
	ctx := context.Background()
	started := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done() // slower than any grace
	}))
	defer up.Close()
	p, err := plugins.Parse(fmt.Appendf(nil, `{"name":"slow","description":"d","parameters":{"type":"object"},
	  "execution":{"method":"GET","base_url":%q}}`, up.URL))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cfg := &config{spool: spoolSettings{dir: filepath.Join(t.TempDir(), "spool")}}
	rec, sp, err := cfg.recorder(st, log)
	if err != nil {
		t.Fatal(err)
	}
	ex := engine.NewExecutor(egresstest.Client(t))
	ex.Recorder, ex.Logger = rec, log

	calls, cancelCalls := context.WithCancelCause(ctx)
	defer cancelCalls(nil)
	answered := make(chan *engine.Result, 1)
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res, _ := ex.Execute(r.Context(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{}`)})
			answered <- res
		}),
		BaseContext: func(net.Listener) context.Context { return calls },
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	go http.Post("http://"+ln.Addr().String(), "application/json", nil)
	<-started

	if err := shutdown(hs, cancelCalls, 0, log); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	res := <-answered
	closeRecords(rec, sp)
	got, err := st.ListExecutions(ctx, store.ExecutionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != res.ExecutionID || got[0].ErrorMessage != "the call was canceled: the engine is shutting down" {
		t.Fatalf("executions %+v, want the canceled call's, saying the engine was shutting down", got)
	}
}

// Issue 15, point 1: serve started while the database cannot be reached
// listens, says so on /readyz and serves nothing; once the database is
// there it serves. The error (here the driver's, opening the file) is shown to
// the metrics or admin token only (leftovers77; before: to anyone).
func TestServeStartsBeforeTheDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-yet") // SQLite cannot open a file here until it exists
	addr := freeAddr(t)
	key := make([]byte, 32)
	rand.Read(key)
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_DB=sqlite:"+filepath.Join(dir, "db"),
		"BLINDEXEC_ADDR="+addr, "BLINDEXEC_SPOOL_DIR="+t.TempDir(), "BLINDEXEC_SERVICE_TOKEN=svc",
		"BLINDEXEC_METRICS_TOKEN=metrics-tok-0123456789", "BLINDEXEC_MASTER_KEY="+base64.StdEncoding.EncodeToString(key))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			t.Logf("serve log:\n%s", logs.String())
		}
	}()
	token := "svc"
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	awaitStatus := func(path string, want int) string {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if code, body := get(path); code == want {
				return body
			}
		}
		t.Fatalf("%s never answered %d", path, want)
		return ""
	}
	if body := awaitStatus("/readyz", http.StatusServiceUnavailable); !strings.Contains(body, "database_unavailable") || !strings.Contains(body, "not read the database yet") || strings.Contains(body, "unable to open") {
		t.Errorf("/readyz before the database, the service token: %s, want the kind without the error", body)
	}
	token = "metrics-tok-0123456789"
	if body := awaitStatus("/readyz", http.StatusServiceUnavailable); !strings.Contains(body, "not read the database yet: ") || !strings.Contains(body, "unable to open") {
		t.Errorf("/readyz before the database, the metrics token: %s, want the error", body)
	}
	token = "svc"
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz before the database: %d", code)
	}
	if code, body := get("/v1/plugins"); code != http.StatusServiceUnavailable {
		t.Errorf("/v1/plugins before the database: %d %s, want 503", code, body)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	awaitStatus("/readyz", http.StatusOK)
	if code, body := get("/v1/plugins"); code != http.StatusOK {
		t.Errorf("/v1/plugins once the database is there: %d %s", code, body)
	}
}

func TestSpoolSettings(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		commit  time.Duration
		gather  time.Duration
		wantErr string
	}{
		{env: nil, commit: 20 * time.Millisecond, gather: 100 * time.Millisecond},
		{env: map[string]string{"BLINDEXEC_SPOOL_COMMIT_MS": "5", "BLINDEXEC_SPOOL_GATHER_MS": "250"},
			commit: 5 * time.Millisecond, gather: 250 * time.Millisecond},
		// 0 turns the gathering off, which the spool spells negative (its
		// zero is its default).
		{env: map[string]string{"BLINDEXEC_SPOOL_GATHER_MS": "0"}, commit: 20 * time.Millisecond, gather: -1},
		{env: map[string]string{"BLINDEXEC_SPOOL_GATHER_MS": "-5"}, wantErr: "BLINDEXEC_SPOOL_GATHER_MS"},
		{env: map[string]string{"BLINDEXEC_SPOOL_GATHER_MS": "1s"}, wantErr: "BLINDEXEC_SPOOL_GATHER_MS"},
	} {
		got, err := fromEnv(tc.env, loadSpoolSettings)
		if expectErr(t, tc.env, err, tc.wantErr) {
			continue
		}
		if err != nil || got.commit != tc.commit || got.gather != tc.gather {
			t.Errorf("%v: commit %v, gather %v, %v; want %v, %v", tc.env, got.commit, got.gather, err, tc.commit, tc.gather)
		}
	}
}
