package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/store"
)

// EnvPendingMax and EnvPendingRetention name the bounds of pending items
// (issue 44 point 5): how many may wait for one user, and how long a
// decided or expired one is kept.
const (
	EnvPendingMax       = "BLINDEXEC_PENDING_MAX_PER_USER"
	EnvPendingRetention = "BLINDEXEC_PENDING_RETENTION_MS"
)

// Error codes of the pending items' bounds.
const (
	codeTooManyPending  = loop.CodeTooManyPending  // 429
	codePendingTooLarge = loop.CodePendingTooLarge // 413
)

// pendingRefusal is the answer to a pending item its bounds refused
// (err from the store), or ok false for any other error.
func pendingRefusal(err error) (status int, code, msg string, details map[string]any, ok bool) {
	var many *store.TooManyPendingError
	var large *store.PendingTooLargeError
	switch {
	case errors.As(err, &many):
		return http.StatusTooManyRequests, codeTooManyPending,
			fmt.Sprintf("%d calls of this user wait for a person already, the most %s allows (%d): nothing was sent and nothing more is held; decide or deny waiting calls (GET /v1/pending, GET /v1/runs?status=paused, the console's Approvals) or let them expire, then try again",
				many.Waiting, EnvPendingMax, many.Max),
			map[string]any{"setting": EnvPendingMax, "max": many.Max, "waiting": many.Waiting}, true
	case errors.As(err, &large):
		return http.StatusRequestEntityTooLarge, codePendingTooLarge,
			fmt.Sprintf("this call waits for a person, but what a person must read of it (its arguments and request) is %d bytes, more than the %d a pending item holds: nothing was sent; send smaller arguments", large.Size, large.Max),
			map[string]any{"size": large.Size, "max": large.Max}, true
	}
	return 0, "", "", nil, false
}

// pendingRefused answers err when the pending items' bounds refused it
// (429 too_many_pending with Retry-After, 413 pending_too_large) and
// reports whether it did.
func pendingRefused(w http.ResponseWriter, err error) bool {
	status, code, msg, details, ok := pendingRefusal(err)
	if !ok {
		return false
	}
	if status == http.StatusTooManyRequests {
		retryLater(w, status, code, msg, time.Minute, details)
	} else {
		writeError(w, status, code, msg, details)
	}
	return true
}

// refusePause turns the reply of a run whose pause the bounds refused
// (err from storing it) into a failed run: nothing was sent, nothing is
// held. It reports whether it did.
func refusePause(reply *loop.Reply, err error) bool {
	_, code, msg, _, ok := pendingRefusal(err)
	if !ok {
		return false
	}
	reply.Status, reply.Pending, reply.Saved = loop.StatusFailed, nil, nil
	reply.Error = &loop.RunError{Code: code, Message: msg}
	return true
}

// pageParams reads an inbox's ?limit= (1 to store.MaxPage) and ?cursor=
// (the next of the page before).
func pageParams(w http.ResponseWriter, r *http.Request) (limit int, cursor string, ok bool) {
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxPage {
			writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("limit: expected 1 to %d", store.MaxPage), map[string]string{"field": "limit"})
			return 0, "", false
		}
		limit = n
	}
	return limit, q.Get("cursor"), true
}

// pageFailed answers the error of reading a page: 400 for a cursor the
// engine did not hand out.
func (s *Server) pageFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, store.ErrBadCursor) {
		writeError(w, http.StatusBadRequest, "malformed_request", "cursor: expected the next of the page before", map[string]string{"field": "cursor"})
		return
	}
	s.internal(w, r, err)
}

// inboxPage is an inbox's answer: the rows under key, and next when another
// page follows.
func inboxPage(key string, rows any, next string) map[string]any {
	out := map[string]any{key: rows}
	if next != "" {
		out["next"] = next
	}
	return out
}

// listPending is GET /v1/pending[?user_id=&limit=&cursor=]: the direct
// calls (MCP clients', prepared ones) waiting for a person, newest first,
// one page at a time ({"pending": [...], "next": cursor}), each with its
// user and who prepared it; a per-user token sees its own user's, and one
// with fixed perms those of the tools its perms allow (seen).
func (s *Server) listPending(w http.ResponseWriter, r *http.Request) {
	user, ok := inboxUser(w, r)
	if !ok {
		return
	}
	limit, cursor, ok := pageParams(w, r)
	if !ok {
		return
	}
	sn, ok := s.seenOf(w, r)
	if !ok {
		return
	}
	items, next, err := s.Store.WaitingPage(r.Context(), store.WaitingFilter{User: user, Tools: sn.toolFilter()}, cursor, limit)
	if err != nil {
		s.pageFailed(w, r, err)
		return
	}
	var users []int64
	for _, it := range items {
		if it.UserID != nil {
			users = append(users, *it.UserID)
		}
	}
	names := s.userNames(r.Context(), users)
	out := make([]map[string]json.RawMessage, len(items))
	for i, it := range items {
		// The item as the call prepared it, with whom it is for and who
		// prepared it (a person deciding reads both).
		if err := json.Unmarshal(it.Item, &out[i]); err != nil {
			s.internal(w, r, fmt.Errorf("pending item %s: %w", it.ID, err))
			return
		}
		if it.UserID != nil {
			out[i]["user_id"], _ = json.Marshal(*it.UserID)
			if n := names[*it.UserID]; n != "" {
				out[i]["user_name"], _ = json.Marshal(n)
			}
		}
		out[i]["prepared_by"], _ = json.Marshal(it.Principal)
	}
	writeJSON(w, http.StatusOK, inboxPage("pending", out, next))
}

// runStatuses are the statuses GET /v1/runs filters by: the loop's and
// the engine's own.
var runStatuses = map[string]bool{store.RunRunning: true, store.RunPaused: true, store.RunResuming: true, store.RunExpired: true,
	loop.StatusCompleted: true, loop.StatusMaxSteps: true, loop.StatusBudgetExhausted: true, loop.StatusFailed: true, loop.StatusCancelled: true}

// listRuns is GET /v1/runs[?status=&user_id=&since=&until=&limit=&cursor=]:
// the runs, newest first, one page at a time ({"runs": [...], "next":
// cursor}); a per-user token sees its own user's, and one with fixed
// perms the runs it started (seen). A paused run carries its
// waiting items and what its user last asked (RuoYi's inbox, the
// console's Approvals). Neither a run's reply, nor its state, nor its
// messages is read.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var filter store.RunFilter
	if st := q.Get("status"); st != "" {
		if !runStatuses[st] {
			writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("status: %q is not a run's status", st), map[string]string{"field": "status"})
			return
		}
		filter.Status = st
	}
	for _, b := range []struct {
		name string
		at   **time.Time
	}{{"since", &filter.Since}, {"until", &filter.Until}} {
		if v := q.Get(b.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeError(w, http.StatusBadRequest, "malformed_request", b.name+": expected a time in RFC 3339 (2026-11-28T18:00:00Z)", map[string]string{"field": b.name})
				return
			}
			*b.at = &t
		}
	}
	var ok bool
	if filter.User, ok = inboxUser(w, r); !ok {
		return
	}
	limit, cursor, ok := pageParams(w, r)
	if !ok || !s.expireRuns(w, r) {
		return
	}
	sn, ok := s.seenOf(w, r)
	if !ok {
		return
	}
	filter.Token = sn.runFilter()
	runs, next, err := s.Store.RunsPage(r.Context(), filter, cursor, limit)
	if err != nil {
		s.pageFailed(w, r, err)
		return
	}
	var paused []string
	for i := range runs {
		if runs[i].Status == store.RunPaused {
			paused = append(paused, runs[i].ID)
		}
	}
	items, err := s.Store.WaitingItemsOf(r.Context(), paused)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	pending := make(map[string][]json.RawMessage, len(paused))
	for _, it := range items {
		pending[it.RunID] = append(pending[it.RunID], json.RawMessage(it.Item))
	}
	var users []int64
	for _, run := range runs {
		if run.UserID != nil {
			users = append(users, *run.UserID)
		}
	}
	names := s.userNames(r.Context(), users)
	out := make([]map[string]any, 0, len(runs))
	for _, run := range runs {
		row := map[string]any{"run_id": run.ID, "user_id": run.UserID, "status": run.Status, "create_time": run.CreateTime, "update_time": run.UpdateTime}
		if run.UserID != nil && names[*run.UserID] != "" {
			row["user_name"] = names[*run.UserID]
		}
		for k, v := range map[string]string{"model": run.Model, "error_code": run.ErrorCode, "trace_id": run.TraceID, "first_message": run.FirstMessage} {
			if v != "" {
				row[k] = v
			}
		}
		if run.Status == store.RunPaused {
			row["expire_time"] = run.ExpireTime
			row["pending"] = append([]json.RawMessage{}, pending[run.ID]...)
			if run.Asked != "" {
				row["asked"] = run.Asked
			}
		}
		out = append(out, row)
	}
	writeJSON(w, http.StatusOK, inboxPage("runs", out, next))
}

// inboxUser is the user an inbox (?user_id=) lists the items of: the
// named one, a per-user token's own, or nil (every user) for the
// service and admin tokens naming none.
func inboxUser(w http.ResponseWriter, r *http.Request) (*int64, bool) {
	var named int64
	if v := r.URL.Query().Get("user_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "malformed_request", "user_id: expected a positive integer", nil)
			return nil, false
		}
		named = n
	}
	user, ok := actingUser(w, r, UserID(named))
	if !ok || user == 0 {
		return nil, ok
	}
	return &user, true
}

// PruneEvery is how often RetainPending removes closed pending items.
const PruneEvery = time.Hour

// RetainPending removes, every PruneEvery until ctx ends, the pending
// items decided or expired more than retention ago
// (BLINDEXEC_PENDING_RETENTION_MS), after giving back to paused the runs
// claimed for a resume more than runTimeout ago that never started
// (store.ReturnStalledRuns): any replica may, each step is idempotent.
// The decisions stay in the audit log and the execution records.
func RetainPending(ctx context.Context, st *store.Store, retention time.Duration, logger *slog.Logger) {
	t := time.NewTicker(PruneEvery)
	defer t.Stop()
	for {
		switch n, err := st.ReturnStalledRuns(ctx, time.Now().Add(-runTimeout)); {
		case err != nil && ctx.Err() == nil:
			logger.WarnContext(ctx, "stalled resumes not given back; tried again later", "err", err)
		case n > 0:
			logger.InfoContext(ctx, "stalled resumes given back to paused", "runs", n)
		}
		n, err := st.PrunePending(ctx, time.Now().Add(-retention))
		switch {
		case err != nil && ctx.Err() == nil:
			logger.WarnContext(ctx, "closed pending items not removed; tried again later", "err", err)
		case n > 0:
			logger.InfoContext(ctx, "closed pending items removed", "items", n, "retention", retention)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// auditElicited records in the audit log a decision a person made
// through the MCP client's elicitation, as the console records those
// made through the API: closed items are removed after
// BLINDEXEC_PENDING_RETENTION_MS, the log keeps each decision (which
// item, the digest of the exact request, the outcome).
func auditElicited(ctx context.Context, st *store.Store, logger *slog.Logger, user int64, id, outcome string) {
	target := "elicitation pending " + id
	actor := "user " + strconv.FormatInt(user, 10)
	it, err := st.GetPendingItem(ctx, id)
	if err == nil {
		target += " digest " + it.Digest
	}
	e := &store.AdminEvent{Actor: actor, Via: "mcp", Action: outcome, Kind: "decision", Target: target, HTTPStatus: http.StatusOK}
	if it != nil {
		it.Status = outcome
		e.SetDetail(AuditDecision(it, actor))
	}
	if err := st.InsertAdminEvent(context.WithoutCancel(ctx), e); err != nil {
		logger.WarnContext(ctx, "a decision made through elicitation not recorded in the audit log", "pending", id, "err", err)
	}
}
