package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/engine/recordspool"
)

// startGate is serve's handler until the engine has read the database:
// /healthz answers, /readyz and every other route answer 503 saying why,
// so that an instance started while the database is down says so and
// serves nothing it has not read. open hands over to the real routes.
// The last error (the database's host and name, the driver's words) is
// logged, and shown to a caller with one of operators' tokens only (the
// administrator's, the metrics token), as /readyz's detail is.
type startGate struct {
	h         atomic.Pointer[http.Handler]
	why       atomic.Pointer[string]
	operators []string
}

func (g *startGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := g.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if r.URL.Path == "/healthz" {
		json.NewEncoder(w).Encode(map[string]string{"status": "ok"})
		return
	}
	msg := "the engine has not read the database yet"
	if why := g.why.Load(); why != nil && api.BearerIs(r, g.operators...) {
		msg += ": " + *why
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "database_unavailable", "message": msg}})
}

func (g *startGate) open(h http.Handler) { g.h.Store(&h) }

func (g *startGate) failed(err error) {
	s := err.Error()
	g.why.Store(&s)
}

// engineWhenReachable is engine, tried again with a growing pause (1 s to
// 30 s) while the database cannot be reached or migrated; the gate says
// why meanwhile. Settings that no retry can fix fail at once.
func (c *config) engineWhenReachable(ctx context.Context, sch schema, log *slog.Logger, gate *startGate) (*engineParts, error) {
	if c.masterKey == "" {
		// The console's sessions need it whatever the database holds: found
		// here, before the database is waited for or migrated.
		return nil, usagef("BLINDEXEC_MASTER_KEY is not set: serve needs it (stored credentials, the console's sessions, MCP request states): `blindexec init` writes one to blindexec.env, or set it to the key this database was set up with (base64 of 32 bytes)")
	}
	if _, err := auth.ParseKeyring(c.masterKey, c.oldKeys); err != nil {
		return nil, err
	}
	if _, err := c.egressClient(); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(c.db, "sqlite:") && !strings.HasPrefix(c.db, "mysql:") {
		return nil, fmt.Errorf("--db: want sqlite:PATH or mysql:DSN")
	}
	if c.spool.dir != "" {
		if err := recordspool.Probe(c.spool.dir); err != nil {
			return nil, c.spoolDirError(err)
		}
	}
	wait := time.Second
	for attempt := 1; ; attempt++ {
		// A blackholed database would hold an attempt forever.
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		parts, err := c.engine(actx, sch, log)
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("database reached: serving", "attempts", attempt)
			}
			return parts, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var (
			mismatch *auth.KeyMismatchError
			spoolDir *recordspool.DirError
		)
		switch {
		case errors.As(err, &mismatch):
			return nil, err // the wrong key stays wrong
		case errors.As(err, &spoolDir):
			return nil, c.spoolDirError(err) // taken since the probe
		}
		gate.failed(err)
		if attempt == 1 {
			log.Error("database not reached or not migrated at start: serving nothing until it is; retrying", "err", err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wait = min(2*wait, 30*time.Second)
	}
}
