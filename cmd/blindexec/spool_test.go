package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/egress/egresstest"
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
