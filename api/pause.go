package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/tracing"
)

// pausedState is sys_ai_run.state of a paused run: the payload without
// its credentials (only their key names, which a resume must give
// again), and what the loop saved.
type pausedState struct {
	Request        RunRequest  `json:"request"`
	PayloadCredKey []string    `json:"payload_credential_keys,omitempty"`
	Saved          *loop.Saved `json:"saved"`
	// PausedAt and WaitFrom (the traceparent of the request that paused
	// the run, "" untraced) let the resuming request trace the wait.
	PausedAt time.Time `json:"paused_at"`
	WaitFrom string    `json:"wait_from,omitempty"`
	// StartedBy is the principal that started the run: the rest of the
	// run — binding, classification, credentials, quotas — is decided as
	// it, whoever resumes (issue 44). A state stored without it (before
	// this field) is read as a user's, the strictest.
	StartedBy runPrincipal `json:"started_by"`
}

// runPrincipal is who started a run: the token's kind and, for a
// per-user token, its user. Whether the run's inline plugins are bound
// to the catalog follows from the kind (engine.Call.Inline).
type runPrincipal struct {
	Role string `json:"role"`
	User int64  `json:"user,omitempty"`
	// Perms are the fixed perms of the per-user token that started the
	// run (nil: none): they narrow the run on every resume, whoever
	// resumes it (issue 46).
	Perms []string `json:"perms"` // null: none; [] (an unreadable column) holds nothing
	// Token is that token's id (sys_ai_run.token_id, so not kept in the
	// state): the run's calls name it (engine.Call.Token), and are
	// decided with its perms as they are at each call.
	Token int64 `json:"-"`
}

// startedBy is the runPrincipal of p.
func startedBy(p principal) runPrincipal {
	rp := runPrincipal{Role: p.role.String(), Perms: p.perms, Token: p.tokenID}
	if p.role == roleUser {
		rp.User = p.userID
	}
	return rp
}

// startedNow is rp, the principal that started run, with its token and
// the perms the token has now (the server's cache, as its calls read
// them): the token's perms narrowed or cleared on any replica (or by
// RuoYi's SQL) since the run paused are the run's from its resume on, and
// a run whose token was revoked or expired goes on narrowed to nothing.
// A run naming no token (started before migration 00028, or by the
// service or the administrator) keeps rp's.
func (s *Server) startedNow(ctx context.Context, run *store.Run, rp runPrincipal) (runPrincipal, error) {
	if run.TokenID == nil || run.UserID == nil {
		return rp, nil
	}
	t, err := s.tokenByID(ctx, *run.UserID, *run.TokenID)
	if err != nil {
		return rp, fmt.Errorf("read the token that started run %s: %w", run.ID, err)
	}
	rp.Token, rp.Perms = *run.TokenID, t.perms
	if t.gone() {
		rp.Perms = []string{} // as its calls are decided (engine.Tokens)
	}
	return rp, nil
}

// owner is the engine's kind of the run's principal.
func (rp runPrincipal) owner() engine.Owner {
	switch rp.Role {
	case roleAdmin.String():
		return engine.OwnerAdmin
	case roleService.String():
		return engine.OwnerService
	}
	return engine.OwnerUser
}

// pauseRun stores a paused run: its reply (the pending items shown), its
// state and its pending items. The payload's credentials are not stored.
func (s *Server) pauseRun(ctx context.Context, run *store.Run, req RunRequest, started runPrincipal, reply *loop.Reply) error {
	keys := slices.Sorted(maps.Keys(req.Credentials))
	req.Credentials = nil
	state, err := json.Marshal(pausedState{Request: req, PayloadCredKey: keys, Saved: reply.Saved,
		PausedAt: time.Now(), WaitFrom: tracing.Traceparent(ctx), StartedBy: started})
	if err != nil {
		return fmt.Errorf("encode the paused run's state: %w", err)
	}
	body, err := json.Marshal(reply)
	if err != nil {
		return fmt.Errorf("encode the paused run's reply: %w", err)
	}
	run.Reply, run.State = body, state
	items := make([]store.PendingItem, len(reply.Pending))
	for i, p := range reply.Pending {
		item, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode pending item: %w", err)
		}
		items[i] = store.PendingItem{ID: p.ID, RunID: run.ID, UserID: run.UserID, Kind: p.Kind, Tool: p.Tool,
			ToolCallID: p.ToolCallID, Digest: p.Digest, Item: item, ExpireTime: p.ExpiresAt}
		if run.ExpireTime == nil || p.ExpiresAt.Before(*run.ExpireTime) {
			t := p.ExpiresAt
			run.ExpireTime = &t
		}
	}
	return s.Store.PauseRun(ctx, run, items)
}

// ResumeRequest is the body of POST /v1/runs/{run_id}/resume.
type ResumeRequest struct {
	Decisions []struct {
		ID       string `json:"id"`
		Decision string `json:"decision"`
		Reason   string `json:"reason,omitempty"`
	} `json:"decisions"`
	// Credentials are the payload credentials of the run again: a pause
	// keeps none.
	Credentials map[string]string `json:"credentials,omitempty"`
	Stream      bool              `json:"stream,omitempty"`
}

// decider names who decides, for the records: the token's kind, with
// the user of a per-user token.
func decider(p principal) string {
	if p.role == roleUser {
		return "user:" + strconv.FormatInt(p.userID, 10)
	}
	return p.role.String()
}

// actor says who p is as the audit log does: "user 7", "service",
// "admin".
func (p principal) actor() string { return strings.Replace(decider(p), ":", " ", 1) }

// expireRuns closes the runs paused past their expiry, whichever
// replica paused them, before a paused run is read.
func (s *Server) expireRuns(w http.ResponseWriter, r *http.Request) bool {
	n, err := s.Store.ExpireRuns(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return false
	}
	if n > 0 {
		s.Logger.InfoContext(r.Context(), "pending calls expired", "items", n)
		s.confirmMetrics.Count(confirm.Expired, int(n))
	}
	return true
}

// pausedRun loads run_id for the caller: 404 when it does not exist or
// is not one the caller sees (seen: another user's, or another token's
// for a token with fixed perms; whoever asks cannot tell which).
func (s *Server) pausedRun(w http.ResponseWriter, r *http.Request) (*store.Run, bool) {
	if !s.expireRuns(w, r) {
		return nil, false
	}
	sn, ok := s.seenOf(w, r)
	if !ok {
		return nil, false
	}
	id := r.PathValue("run_id")
	run, err := s.Store.GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !sn.run(run) {
		writeError(w, http.StatusNotFound, "run_not_found", fmt.Sprintf("no run %q", id), nil)
		return nil, false
	}
	if err != nil {
		s.internal(w, r, err)
		return nil, false
	}
	return run, true
}

// resumeRun is POST /v1/runs/{run_id}/resume: the person's decisions
// about a paused run's pending items. Decisions are claimed one by one
// with conditional updates; when every item is decided, one replica
// claims the run (paused → resuming) and goes on with it. A partial
// answer leaves the run paused.
func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request) {
	var req ResumeRequest
	if !decodeStrict(w, r, &req) {
		return
	}
	run, ok := s.pausedRun(w, r)
	if !ok {
		return
	}
	// Under BLINDEXEC_CONFIRM_VIA=console a user's API token neither
	// decides nor resumes, an expired run included (issue 44 point 8).
	p := principalFrom(r.Context())
	if p.role == roleUser && !s.mayDecide(w, p) {
		return
	}
	if run.Status == store.RunExpired {
		s.resumeExpired(w, r, run, req)
		return
	}
	if run.Status != store.RunPaused {
		writeError(w, http.StatusConflict, "run_not_paused", fmt.Sprintf("run %s is %s, not paused", run.ID, run.Status), map[string]string{"status": run.Status})
		return
	}
	items, err := s.Store.PendingItems(r.Context(), run.ID)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	byID := map[string]*store.PendingItem{}
	for i := range items {
		byID[items[i].ID] = &items[i]
	}
	by := decider(p)
	for i, d := range req.Decisions {
		field := fmt.Sprintf("decisions[%d]", i)
		item := byID[d.ID]
		if item == nil {
			writeError(w, http.StatusBadRequest, "invalid_payload", field+".id: no pending item of this run has this id", map[string]string{"field": field + ".id"})
			return
		}
		outcome := confirm.Outcome(item.Kind, d.Decision)
		if outcome == "" {
			writeError(w, http.StatusBadRequest, "invalid_payload", fmt.Sprintf("%s.decision: expected %s (a pending %s)", field, confirm.Decisions(item.Kind), item.Kind),
				map[string]string{"field": field + ".decision"})
			return
		}
		if len(d.Reason) > 500 {
			writeError(w, http.StatusBadRequest, "invalid_payload", field+".reason: at most 500 bytes", map[string]string{"field": field + ".reason"})
			return
		}
		if item.Status != store.PendingWaiting {
			continue // decided before: the first decision stands
		}
		won, err := s.Store.DecideItem(r.Context(), item.ID, outcome, by, d.Reason)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		if won {
			s.confirmMetrics.Count(outcome, 1)
			item.Status, item.DecidedBy, item.Reason = outcome, by, d.Reason
		}
	}
	// Read again: another request may have decided the others meanwhile.
	if items, err = s.Store.PendingItems(r.Context(), run.ID); err != nil {
		s.internal(w, r, err)
		return
	}
	if slices.ContainsFunc(items, func(it store.PendingItem) bool { return it.Status == store.PendingWaiting }) {
		s.answerPaused(w, r, run.ID) // a partial answer: still paused
		return
	}
	s.claimRun(w, r, run, store.RunPaused, req, items)
}

// resumeExpired is a resume of a run closed as expired: its decisions
// come too late and are not applied. The run is claimed once (expired →
// resuming) and the model is told, for each item, that the user did not
// decide in time — a denied one keeps its denial — and nothing is sent,
// an item approved before the run expired included (an authorization:
// that the user did not connect in time); then the model goes on, as
// after a denial.
func (s *Server) resumeExpired(w http.ResponseWriter, r *http.Request, run *store.Run, req ResumeRequest) {
	if len(run.State) == 0 {
		// Expired longer ago than BLINDEXEC_PENDING_RETENTION_MS: its
		// items and state are removed, and the run stays as it ended.
		writeError(w, http.StatusConflict, "run_not_paused", fmt.Sprintf("run %s expired more than %s ago and was closed; start a new run", run.ID, EnvPendingRetention),
			map[string]string{"status": run.Status})
		return
	}
	items, err := s.Store.PendingItems(r.Context(), run.ID)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	for i := range items {
		if items[i].Status != confirm.Denied && items[i].Status != confirm.Cancelled {
			items[i].Status, items[i].Reason = confirm.Expired, ""
		}
	}
	s.claimRun(w, r, run, store.RunExpired, req, items)
}

// claimRun claims run, whose items are all decided, from status from
// (paused → resuming, or expired → resuming) with a conditional update
// — of two replicas one wins, the other answers 409 — and continues it.
func (s *Server) claimRun(w http.ResponseWriter, r *http.Request, run *store.Run, from string, req ResumeRequest, items []store.PendingItem) {
	var st pausedState
	if err := json.Unmarshal(run.State, &st); err != nil || st.Saved == nil || st.Saved.Reply == nil {
		s.internal(w, r, fmt.Errorf("run %s: unreadable paused state: %v", run.ID, err))
		return
	}
	// This pause's items only: a run paused again keeps the items of its
	// earlier pauses, decided and acted on then, never to be again.
	current := map[string]bool{}
	for _, p := range st.Saved.Reply.Pending {
		current[p.ID] = true
	}
	items = slices.DeleteFunc(items, func(it store.PendingItem) bool { return !current[it.ID] })
	if missing := slices.DeleteFunc(slices.Clone(st.PayloadCredKey), func(k string) bool { return req.Credentials[k] != "" }); len(missing) > 0 {
		writeError(w, http.StatusBadRequest, "credentials_required",
			"credentials: the run used payload credentials, which a pause never keeps: give "+strings.Join(missing, ", ")+" again",
			map[string]any{"missing": missing})
		return
	}
	won, err := s.Store.MoveRun(r.Context(), run.ID, from, store.RunResuming)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if !won {
		writeError(w, http.StatusConflict, "run_not_paused", fmt.Sprintf("run %s is being resumed by another request", run.ID), nil)
		return
	}
	s.continueRun(w, r, run, from, &st, req, items)
}

// continueRun goes on with a run claimed from status from: the decided
// items in the order the model asked, then the model. A run that cannot
// go on is given back to from.
func (s *Server) continueRun(w http.ResponseWriter, r *http.Request, run *store.Run, from string, st *pausedState, req ResumeRequest, items []store.PendingItem) {
	ctx := context.WithoutCancel(r.Context())
	user := int64(0)
	if run.UserID != nil {
		user = *run.UserID
	}
	st.Request.Credentials = req.Credentials
	// As the principal that started the run, not as this request's: the
	// resumer decides only the pending items.
	started, err := s.startedNow(r.Context(), run, st.StartedBy)
	var lreq *loop.Request
	var fields []plugins.FieldError
	if err == nil {
		st.StartedBy = started
		lreq, fields, err = s.loopRequest(r.Context(), &st.Request, user, started)
	}
	if err == nil && len(fields) > 0 {
		err = fmt.Errorf("the run's plugins changed: %v", (&loop.ValidationError{Fields: fields}).Error())
	}
	if err != nil {
		s.Store.MoveRun(ctx, run.ID, store.RunResuming, from)
		// The run's agent gone, disabled or no longer the user's, or the
		// permissions unreadable: said, and the run stays as it was.
		if !unavailable(w, err) && !refusedAgent(w, err) {
			s.internal(w, r, err)
		}
		return
	}
	lreq.RunID = run.ID
	stream := req.Stream || strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	lreq.Options.Stream = stream
	decisions := make([]loop.Decision, 0, len(items))
	for _, it := range items {
		var p loop.Pending
		if err := json.Unmarshal(it.Item, &p); err != nil {
			s.internal(w, r, fmt.Errorf("pending item %s: %w", it.ID, err))
			return
		}
		p.Digest = it.Digest
		d := loop.Decision{Pending: p, Outcome: it.Status, Reason: it.Reason, By: it.DecidedBy}
		if it.DecidedTime != nil {
			d.At = *it.DecidedTime
		}
		decisions = append(decisions, d)
	}
	traceWait(r.Context(), st, items)
	release, err := s.Executor.Limiter.AcquireRun(user)
	var le *engine.LimitError
	if errors.As(err, &le) {
		s.Store.MoveRun(ctx, run.ID, store.RunResuming, from)
		tooMany(w, le.Error(), le.RetryAfter, map[string]any{"limit": "concurrent runs per user", "max": le.Max})
		return
	}
	defer release()
	// The loop starts: the run leaves resuming, which the retention sweep
	// gives back to paused after runTimeout (store.ReturnStalledRuns, a
	// give back that failed), for running, which it never gives back —
	// what the loop sent is never sent twice.
	if won, err := s.Store.MoveRun(r.Context(), run.ID, store.RunResuming, store.RunRunning); err != nil || !won {
		if err != nil {
			s.Store.MoveRun(ctx, run.ID, store.RunResuming, from)
			s.internal(w, r, err)
			return
		}
		writeError(w, http.StatusConflict, "run_not_paused", fmt.Sprintf("run %s is being resumed by another request", run.ID), nil)
		return
	}
	rctx, cancel := context.WithTimeout(s.asking(r.Context(), principalFrom(r.Context()), nil), runTimeout)
	defer cancel()
	run.State, run.ExpireTime = nil, nil
	var reply *loop.Reply
	if stream {
		reply = s.stream(w, func(emit func(loop.Event)) *loop.Reply {
			return s.Runner.Resume(rctx, *lreq, st.Saved, decisions, emit)
		})
	} else {
		reply = s.Runner.Resume(rctx, *lreq, st.Saved, decisions, nil)
	}
	for _, step := range reply.Steps {
		if d := step.Decision; d != nil && d.Outcome == confirm.Stale {
			if err := s.Store.MarkItemStale(ctx, d.PendingID); err != nil {
				s.Logger.ErrorContext(ctx, "mark pending item stale", "run", run.ID, "err", err)
			}
			s.confirmMetrics.Count(confirm.Stale, 1)
		}
	}
	s.finishRun(ctx, run, st.Request, st.StartedBy, reply)
	if !stream {
		writeJSON(w, runStatus(reply), reply)
	}
}

// finishRun stores a run's reply: paused again (its state and items), or
// ended. A pause the pending items' bounds refuse ends the run failed
// (reply says why: too_many_pending, pending_too_large), nothing sent.
func (s *Server) finishRun(ctx context.Context, run *store.Run, req RunRequest, started runPrincipal, reply *loop.Reply) {
	if reply.Status == loop.StatusPaused {
		err := s.pauseRun(ctx, run, req, started, reply)
		if err == nil || !refusePause(reply, err) {
			if err != nil {
				s.Logger.ErrorContext(ctx, "store paused run", "run", run.ID, "err", err)
			}
			return
		}
		run.State, run.ExpireTime = nil, nil
	}
	s.saveReply(ctx, run, reply)
}

// answerPaused answers a paused run's reply with its items still
// waiting.
func (s *Server) answerPaused(w http.ResponseWriter, r *http.Request, id string) {
	run, err := s.Store.GetRun(r.Context(), id)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if run.Status != store.RunPaused {
		writeError(w, http.StatusConflict, "run_not_paused", fmt.Sprintf("run %s is %s, not paused", run.ID, run.Status), map[string]string{"status": run.Status})
		return
	}
	reply, err := s.pausedReply(r.Context(), run)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

// pausedReply is a paused run's stored reply with pending only the items
// still waiting.
func (s *Server) pausedReply(ctx context.Context, run *store.Run) (map[string]any, error) {
	var reply map[string]any
	if err := json.Unmarshal(run.Reply, &reply); err != nil {
		return nil, fmt.Errorf("run %s: unreadable reply: %w", run.ID, err)
	}
	items, err := s.Store.PendingItems(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	pending := []json.RawMessage{}
	for _, it := range items {
		if it.Status == store.PendingWaiting {
			pending = append(pending, json.RawMessage(it.Item))
		}
	}
	reply["pending"] = pending
	reply["status"] = run.Status
	return reply, nil
}

// runStatus is the HTTP status a run's reply is answered with.
func runStatus(reply *loop.Reply) int {
	if reply.Error != nil && reply.Status != loop.StatusMaxSteps && reply.Status != loop.StatusBudgetExhausted {
		return reply.Error.HTTPStatus()
	}
	return http.StatusOK
}
