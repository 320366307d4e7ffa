package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/recordspool"
	"github.com/blindexec/blindexec/internal/settings"
	"github.com/blindexec/blindexec/store"
)

// errShuttingDown is the cause the calls still running when the shutdown
// grace ends are canceled with; their records say it.
var errShuttingDown = errors.New("the engine is shutting down")

// spoolSettings are serve's record spool settings (docs/operations.md, "Durable
// execution records").
type spoolSettings struct {
	dir      string        // BLINDEXEC_SPOOL_DIR; empty: records go straight to the database
	maxBytes int64         // BLINDEXEC_SPOOL_MAX_MB
	commit   time.Duration // BLINDEXEC_SPOOL_COMMIT_MS: the group-commit window
	gather   time.Duration // BLINDEXEC_SPOOL_GATHER_MS: the drainer's wait for a full batch (recordspool.Options.Gather: negative for none)
}

func loadSpoolSettings(src *settings.Source) spoolSettings {
	s := spoolSettings{
		dir:      setSpoolDir.Get(src),
		commit:   setSpoolCommit.Get(src),
		gather:   setSpoolGather.Get(src),
		maxBytes: setSpoolMaxMB.Get(src) << 20,
	}
	if s.gather == 0 {
		s.gather = -1 // the spool's "not at all"; its zero is the default
	}
	return s
}

// spoolDirError turns a spool directory that cannot be used into a
// settings error (exit 2), said like a value that does not parse: no
// retry mends it.
func (c *config) spoolDirError(err error) error {
	var de *recordspool.DirError
	if !errors.As(err, &de) {
		return err
	}
	origin := c.settings.Origin(setSpoolDir.Name)
	if origin == "" {
		origin = "the default"
	}
	why := de.Err.Error()
	switch {
	case errors.Is(de.Err, recordspool.ErrInUse) && de.Pid > 0:
		why = fmt.Sprintf("in use by another process (pid %d): replicas on one host need a spool directory each", de.Pid)
	case errors.Is(de.Err, recordspool.ErrInUse):
		why += ": replicas on one host need a spool directory each"
	}
	return usagef("%s=%q (from %s): %s", setSpoolDir.Name, de.Dir, origin, why)
}

// recorder is the execution recorder: through the spool when serve set
// one, else straight to the database (the one-shot commands).
func (c *config) recorder(st *store.Store, log *slog.Logger) (*engine.Recorder, *recordspool.Spool, error) {
	sink := api.StoreSink{Store: st}
	if c.spool.dir == "" {
		return engine.NewRecorder(sink, engine.RecorderOptions{Logger: log}), nil, nil
	}
	sp, err := recordspool.Open(c.spool.dir, sink, recordspool.Options{MaxBytes: c.spool.maxBytes, Gather: c.spool.gather, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	// The Recorder's flush interval is the group-commit window: one append
	// for the calls of each window, made at once even while earlier
	// windows' fsync runs (InFlight), and one fsync for all the windows
	// appended meanwhile.
	return engine.NewRecorder(sp, engine.RecorderOptions{FlushInterval: c.spool.commit, InFlight: 4, Logger: log}), sp, nil
}

// closeRecords flushes the recorder into the spool, then gives the spool a
// few seconds to hand its records to the database; what it cannot stays
// on disk for the next start.
func closeRecords(rec *engine.Recorder, sp *recordspool.Spool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec.Close(ctx)
	if sp == nil {
		return
	}
	drain, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sp.Close(drain)
}

// shutdown stops hs: calls in flight get grace to finish; those still
// running then are canceled (their records say the engine was shutting
// down) and their handlers given a few seconds to record and answer.
// The caller then flushes the records.
func shutdown(hs *http.Server, cancelCalls context.CancelCauseFunc, grace time.Duration, log *slog.Logger) error {
	log.Info("shutting down: letting calls in flight finish", "grace", grace.String())
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	log.Warn("shutdown grace over: canceling the calls still running")
	cancelCalls(errShuttingDown)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(ctx)
}
