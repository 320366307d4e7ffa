package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/store"
)

// DefaultOutageGrace is how long serve answers from what it read last
// while the database is unreachable.
const DefaultOutageGrace = 5 * time.Minute

// stale is a *store.StaleError when the change counters were last read
// longer than OutageGrace ago, else nil. While they are read, every cache
// is revalidated each poll; while they cannot be, the caches are served
// as they are for OutageGrace. The executor refuses calls by the same
// rule (engine.Executor.Fresh), for what a request started within the
// grace goes on calling.
func (s *Server) stale() error {
	if s.Changes == nil {
		return nil
	}
	err := s.Changes.Stale(s.OutageGrace)
	if err == nil {
		if s.closed.CompareAndSwap(true, false) {
			s.Logger.Info("the change counters are read again: serving")
		}
		return nil
	}
	if s.closed.CompareAndSwap(false, true) {
		s.Logger.Error("failing closed: "+err.Error(), "last_read", s.Changes.LastRead())
	}
	return err
}

// failClosed wraps the routes that use what the database holds: past the
// outage grace they answer 503 database_unavailable, saying why.
func (s *Server) failClosed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.stale(); err != nil {
			writeError(w, http.StatusServiceUnavailable, "database_unavailable", err.Error(), nil)
			return
		}
		h(w, r)
	}
}

// Stopping makes /readyz answer 503 (details.status "stopping") from now
// on, every other route unchanged: serve calls it on SIGTERM, so that
// load balancers take the replica out of rotation while it still serves
// what they send meanwhile.
func (s *Server) Stopping() { s.stopping.Store(true) }

// readyz answers 200 while the database answers, and during an outage
// while the engine serves its last snapshot (status "degraded": every
// replica shares the database, so taking them all out of rotation would
// turn the outage into a total one); 503 past the grace, and once the
// replica is stopping.
//
// It needs no token (probes send none), so what it says to anyone is the
// reason's kind; the detail (tables, the database's and the permission
// source's errors) is logged and shown to a caller with the
// administrator's or the metrics token only.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.stopping.Load() {
		writeError(w, http.StatusServiceUnavailable, "not_ready", "the replica is stopping (SIGTERM): it serves what it is still sent until it shuts down",
			map[string]string{"status": "stopping"})
		return
	}
	operator := BearerIs(r, s.AdminToken, s.MetricsToken)
	notReady := func(code, kind string, detail error) {
		s.logNotReady(kind, detail)
		msg := kind
		if operator && detail != nil {
			msg += ": " + detail.Error()
		}
		writeError(w, http.StatusServiceUnavailable, code, msg, nil)
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	err := s.Store.Ping(ctx)
	if err == nil && !s.migrated.Load() {
		if err := s.Store.CheckMigrated(ctx); err != nil {
			if errors.Is(err, store.ErrNotMigrated) {
				writeError(w, http.StatusServiceUnavailable, "not_ready", err.Error()+": run `blindexec migrate`", nil)
				return
			}
			notReady("not_ready", "database schema check failed", err)
			return
		}
		s.migrated.Store(true)
	}
	if err == nil {
		if problem := s.Changes.Problem(); problem != nil {
			// Serving on would hide changes made elsewhere: say so.
			notReady("not_ready", "change counter triggers missing: run `blindexec migrate`", problem)
			return
		}
		if src, ok := s.Access.(permissionSource); ok {
			if err := src.Readable(ctx); err != nil {
				// Every call the source decides is refused meanwhile.
				notReady("not_ready", "permissions source unreadable: every call it decides is refused", sourceUnreadable(err))
				return
			}
		}
		s.notReady.Store(nil)
		// The counters this replica's caches follow: replicas that agree on
		// them serve the same catalog, tokens and credentials.
		body := map[string]any{"status": "ready", "changes": s.Changes.Current()}
		if operator && s.Replicas != nil {
			// Still ready: which of two disagreeing replicas is wrong is
			// the operator's call, and taking both out is an outage.
			if d := s.Replicas.Disagreements(); len(d) > 0 {
				body["replicas"] = map[string]any{"disagree": d}
			}
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	if s.OutageGrace <= 0 {
		notReady("not_ready", "database unreachable", err)
		return
	}
	if stale := s.stale(); stale != nil {
		// Says since when, as every route does past the grace: no detail.
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", stale.Error(), nil)
		return
	}
	s.logNotReady("database unreachable", err)
	database := "unreachable"
	if operator {
		database += ": " + err.Error()
	}
	last := s.Changes.LastRead()
	writeJSON(w, http.StatusOK, map[string]any{
		"status":   "degraded",
		"database": database,
		"serving":  "the catalog, tokens and credentials read at " + last.UTC().Format(time.RFC3339),
		"until":    last.Add(s.OutageGrace).UTC().Format(time.RFC3339),
		"changes":  s.Changes.Current(),
	})
}

// logNotReady logs why /readyz is not ready, once each time the reason
// changes: probes ask many times a second.
func (s *Server) logNotReady(kind string, detail error) {
	msg := kind
	if detail != nil {
		msg += ": " + detail.Error()
	}
	if old := s.notReady.Swap(&msg); old == nil || *old != msg {
		s.Logger.Warn("/readyz: "+kind, "error", detail)
	}
}

// permissionSource is an Access whose database source can be probed
// (*access.Checker): asked at each /readyz, answered from a memo.
type permissionSource interface {
	Readable(ctx context.Context) error
}

// sourceUnreadable is /readyz's detail for an unreadable permission
// source, naming it.
func sourceUnreadable(err error) error {
	if ue, ok := errors.AsType[*access.UnavailableError](err); ok {
		return fmt.Errorf("the permission source %s=%s cannot be read: %w", access.EnvPermissions, ue.Source, ue.Err)
	}
	return err
}
