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
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.stopping.Load() {
		writeError(w, http.StatusServiceUnavailable, "not_ready", "the replica is stopping (SIGTERM): it serves what it is still sent until it shuts down",
			map[string]string{"status": "stopping"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	err := s.Store.Ping(ctx)
	if err == nil && !s.migrated.Load() {
		if err := s.Store.CheckMigrated(ctx); err != nil {
			msg := "database schema check failed"
			if errors.Is(err, store.ErrNotMigrated) {
				msg = err.Error() + ": run `blindexec migrate`"
			}
			writeError(w, http.StatusServiceUnavailable, "not_ready", msg, nil)
			return
		}
		s.migrated.Store(true)
	}
	if err == nil {
		if problem := s.Changes.Problem(); problem != nil {
			// Serving on would hide changes made elsewhere: say so.
			writeError(w, http.StatusServiceUnavailable, "not_ready", problem.Error(), nil)
			return
		}
		if src, ok := s.Access.(permissionSource); ok {
			if err := src.Readable(ctx); err != nil {
				// Every call the source decides is refused meanwhile.
				writeError(w, http.StatusServiceUnavailable, "not_ready", sourceUnreadable(err), nil)
				return
			}
		}
		// The counters this replica's caches follow: replicas that agree on
		// them serve the same catalog, tokens and credentials.
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "changes": s.Changes.Current()})
		return
	}
	if s.OutageGrace <= 0 {
		writeError(w, http.StatusServiceUnavailable, "not_ready", "database unreachable", nil)
		return
	}
	if stale := s.stale(); stale != nil {
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", stale.Error(), nil)
		return
	}
	last := s.Changes.LastRead()
	writeJSON(w, http.StatusOK, map[string]any{
		"status":   "degraded",
		"database": "unreachable: " + err.Error(),
		"serving":  "the catalog, tokens and credentials read at " + last.UTC().Format(time.RFC3339),
		"until":    last.Add(s.OutageGrace).UTC().Format(time.RFC3339),
		"changes":  s.Changes.Current(),
	})
}

// permissionSource is an Access whose database source can be probed
// (*access.Checker): asked at each /readyz, answered from a memo.
type permissionSource interface {
	Readable(ctx context.Context) error
}

// sourceUnreadable is /readyz's word for an unreadable permission source,
// naming it.
func sourceUnreadable(err error) string {
	if ue, ok := errors.AsType[*access.UnavailableError](err); ok {
		return fmt.Sprintf("the permission source %s=%s cannot be read, so every call it decides is refused: %v", access.EnvPermissions, ue.Source, ue.Err)
	}
	return err.Error()
}
