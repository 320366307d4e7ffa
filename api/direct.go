package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/store"
)

// HeaderConfirmation carries the pending id of a prepared call on
// POST /v1/tools/{name}/call, whose body is the flat arguments.
const HeaderConfirmation = "X-Blindexec-Confirmation"

// sendDirect decides a direct call (POST /v1/execute, POST
// /v1/tools/{name}/call, the MCP proxy) and sends it as decided (issue
// 33, issue 44). The decision is the executor's; this renders it. prepare
// answers the prepared request and a pending id without sending;
// confirmation sends the request prepared under that id, for the
// principal that prepared it only, once, when the request decided now
// has the digest approved. Without either, a per-user token's call is
// decided under the operator's policy — one held for a person is
// answered 409 confirmation_required with the prepared request and its
// id — while the service and admin tokens' calls wait for no one (the
// caller is its own loop). ok false: answered; otherwise the caller
// answers the result.
func (s *Server) sendDirect(w http.ResponseWriter, r *http.Request, call *engine.Call, prepare bool, confirmation string) (_ *engine.Result, _ error, ok bool) {
	p := principalFrom(r.Context())
	call.Owner = startedBy(p).owner()
	if p.role == roleUser {
		call.Policy = s.Confirm
	}
	if prepare {
		call.Policy = confirm.Always
	}
	var it *store.PendingItem
	if confirmation != "" {
		if it, ok = s.approvable(w, r, confirmation); !ok {
			return nil, nil, false
		}
		call.Approval = &engine.Approval{PendingID: it.ID, Digest: it.Digest, By: cmp.Or(it.DecidedBy, decider(p))}
	}
	plan, err := s.Executor.Decide(r.Context(), *call)
	switch {
	case plan == nil:
		s.internal(w, r, err)
		return nil, nil, false
	case err != nil:
		if refused, ok := errors.AsType[*engine.RefusedError](err); ok && refused.Code == engine.CodeConfirmationStale && it != nil {
			if won, _ := s.Store.DecideItem(r.Context(), confirmation, confirm.Stale, decider(p), ""); won {
				s.confirmMetrics.Count(confirm.Stale, 1)
			}
			writeError(w, http.StatusConflict, "confirmation_stale", "the call differs from the one prepared (its plugin, its server, arguments or credentials changed); nothing was sent: prepare it again",
				map[string]string{"confirmation": confirmation})
			return nil, nil, false
		}
		return plan.Result(), err, true
	case plan.Verdict() == engine.VerdictPerson:
		s.holdDirect(w, r, call, plan.Person, !prepare)
		return nil, nil, false
	case it != nil && !s.claim(w, r, it):
		return nil, nil, false
	}
	res, err := s.Executor.Send(s.asking(r.Context(), p, plan.Plugin), plan)
	return res, err, true
}

// holdDirect stores a direct call's pending item and answers it: 409
// confirmation_required when the policy holds it (required), else 200
// (prepare).
func (s *Server) holdDirect(w http.ResponseWriter, r *http.Request, call *engine.Call, prev *engine.Preview, required bool) {
	pending, err := storeDirectItem(r.Context(), s.Store, call, prev, decider(principalFrom(r.Context())), s.ConfirmTTL)
	if err != nil {
		if !pendingRefused(w, err) {
			s.internal(w, r, err)
		}
		return
	}
	if required {
		writeError(w, http.StatusConflict, "confirmation_required",
			fmt.Sprintf("%s changes something on the user's behalf: show the request to the user, then send it again with the confirmation %s", pending.Tool, pending.ID),
			map[string]any{"pending": pending})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "prepared", "pending": pending})
}

// storeDirectItem stores the pending item of a direct call prepared as
// prev, for principal alone to send, waiting ttl (confirm.DefaultTTL
// when 0).
func storeDirectItem(ctx context.Context, st *store.Store, call *engine.Call, prev *engine.Preview, principal string, ttl time.Duration) (loop.Pending, error) {
	pending := loop.Pending{ID: confirm.NewID(), Kind: confirm.KindConfirmation, Tool: prev.Plugin.Name, Arguments: call.Arguments,
		Request: prev.Request, ExpiresAt: time.Now().Add(cmp.Or(ttl, confirm.DefaultTTL)).UTC().Truncate(time.Millisecond)}
	item, err := json.Marshal(pending)
	if err != nil {
		return pending, fmt.Errorf("encode pending item: %w", err)
	}
	var uid *int64
	if call.UserID != 0 {
		uid = &call.UserID
	}
	return pending, st.CreatePendingItem(ctx, &store.PendingItem{ID: pending.ID, UserID: uid, Principal: principal, Kind: pending.Kind,
		Tool: pending.Tool, Digest: prev.Digest, Item: item, ExpireTime: pending.ExpiresAt})
}

// approvable reads the pending item id of a direct call: the same
// principal's, one the caller sees (seen: a token with fixed perms, of
// the tools they allow), not expired, not used, approved (or waiting, the
// caller approving it by sending it). Its digest is what the decision
// compares with the request it prepares.
func (s *Server) approvable(w http.ResponseWriter, r *http.Request, id string) (*store.PendingItem, bool) {
	sn, ok := s.seenOf(w, r)
	if !ok {
		return nil, false
	}
	it, err := s.Store.GetPendingItem(r.Context(), id)
	by := decider(principalFrom(r.Context()))
	if errors.Is(err, store.ErrNotFound) || err == nil && (it.RunID != "" || it.Principal != by || !sn.item(it)) {
		writeError(w, http.StatusNotFound, "confirmation_not_found", "no prepared call of yours has this confirmation id", nil)
		return nil, false
	}
	if err != nil {
		s.internal(w, r, err)
		return nil, false
	}
	conflict := func(code, msg string) (*store.PendingItem, bool) {
		writeError(w, http.StatusConflict, code, msg, map[string]string{"confirmation": id})
		return nil, false
	}
	viaConsole := s.ConfirmVia == "console" && principalFrom(r.Context()).role == roleUser
	switch {
	case it.Status == confirm.Approved: // approved in the console (or by the user through /v1/pending)
	case it.Status != store.PendingWaiting:
		return conflict("confirmation_used", "this confirmation was used or closed ("+it.Status+"); prepare the call again")
	case viaConsole:
		return conflict("confirmation_not_approved", "BLINDEXEC_CONFIRM_VIA=console: the user approves this call in the console first (Approvals); nothing was sent")
	}
	if time.Now().After(it.ExpireTime) {
		if won, _ := s.Store.DecideItem(r.Context(), id, confirm.Expired, "", ""); won {
			s.confirmMetrics.Count(confirm.Expired, 1)
		}
		return conflict("confirmation_expired", "this confirmation expired; prepare the call again")
	}
	return it, true
}

// claim approves (when waiting) then claims (approved → sent) the
// pending item it of a call decided as approved: of two requests with
// one confirmation, one sends.
func (s *Server) claim(w http.ResponseWriter, r *http.Request, it *store.PendingItem) bool {
	var (
		won bool
		err error
	)
	if it.Status == store.PendingWaiting {
		if won, err = s.Store.DecideItem(r.Context(), it.ID, confirm.Approved, decider(principalFrom(r.Context())), ""); won {
			s.confirmMetrics.Count(confirm.Approved, 1)
		}
	}
	if err == nil && (won || it.Status == confirm.Approved) {
		won, err = s.Store.ClaimApproved(r.Context(), it.ID)
	}
	if err != nil {
		s.internal(w, r, err)
		return false
	}
	if !won {
		writeError(w, http.StatusConflict, "confirmation_used", "this confirmation was used by another request", map[string]string{"confirmation": it.ID})
		return false
	}
	return true
}
