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

// directGate applies the confirmation rule to a direct call (POST
// /v1/execute, POST /v1/tools/{name}/call) before it is executed (issue
// 33). prepare answers the prepared request and a pending id without
// sending; confirmation sends the request prepared under that id, for
// the principal that prepared it only, once. Without either, the service
// and admin tokens go on (the caller is its own loop), while a per-user
// token's call that needs confirmation under the policy is answered 409
// confirmation_required with the prepared request and its id. It reports
// whether the caller should execute call (then with call.Confirmation set
// when confirmed); otherwise it has answered.
func (s *Server) directGate(w http.ResponseWriter, r *http.Request, call *engine.Call, prepare bool, confirmation string) bool {
	p := principalFrom(r.Context())
	switch {
	case confirmation != "":
		return s.confirmDirect(w, r, call, confirmation)
	case prepare:
		s.prepareDirect(w, r, call, nil)
		return false
	case p.role != roleUser || s.Confirm == "" || call.Plugin == nil || !s.Confirm.Needs(call.Plugin):
		// The policy reads the plugin only: a call it lets through is
		// not previewed, which would prepare it twice (issue 38).
		return true
	}
	prev, refused := s.Executor.Preview(r.Context(), *call)
	if refused != nil {
		return true // refused on execution, recorded as such
	}
	s.prepareDirect(w, r, call, prev)
	return false
}

// prepareDirect stores a direct call's pending item and answers it: 200
// when asked (prepare), 409 confirmation_required when the rule asks
// (prev already prepared).
func (s *Server) prepareDirect(w http.ResponseWriter, r *http.Request, call *engine.Call, prev *engine.Preview) {
	required := prev != nil
	if prev == nil {
		var refused *engine.RefusedError
		if prev, refused = s.Executor.Preview(r.Context(), *call); refused != nil {
			writeResult(w, &engine.Result{Error: &refused.ToolError}, refused)
			return
		}
	}
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

// confirmDirect checks and claims the pending item id for call: the
// same principal, not expired, not used, and the request prepared now
// the one prepared then.
func (s *Server) confirmDirect(w http.ResponseWriter, r *http.Request, call *engine.Call, id string) bool {
	it, err := s.Store.GetPendingItem(r.Context(), id)
	by := decider(principalFrom(r.Context()))
	if errors.Is(err, store.ErrNotFound) || err == nil && (it.RunID != "" || it.Principal != by) {
		writeError(w, http.StatusNotFound, "confirmation_not_found", "no prepared call of yours has this confirmation id", nil)
		return false
	}
	if err != nil {
		s.internal(w, r, err)
		return false
	}
	conflict := func(code, msg string) bool {
		writeError(w, http.StatusConflict, code, msg, map[string]string{"confirmation": id})
		return false
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
	prev, refused := s.Executor.Preview(r.Context(), *call)
	if refused != nil {
		writeResult(w, &engine.Result{Error: &refused.ToolError}, refused)
		return false
	}
	if prev.Digest != it.Digest {
		if won, _ := s.Store.DecideItem(r.Context(), id, confirm.Stale, by, ""); won {
			s.confirmMetrics.Count(confirm.Stale, 1)
		}
		return conflict("confirmation_stale", "the call differs from the one prepared (its plugin, arguments or credentials changed); nothing was sent: prepare it again")
	}
	// Approved (by this request when it was waiting), then claimed
	// (approved → sent): of two requests with one confirmation, one
	// sends.
	var won bool
	if it.Status == store.PendingWaiting {
		if won, err = s.Store.DecideItem(r.Context(), id, confirm.Approved, by, ""); won {
			s.confirmMetrics.Count(confirm.Approved, 1)
		}
	}
	if err == nil && (won || it.Status == confirm.Approved) {
		won, err = s.Store.ClaimApproved(r.Context(), id)
	}
	if err != nil {
		s.internal(w, r, err)
		return false
	}
	if !won {
		return conflict("confirmation_used", "this confirmation was used by another request")
	}
	call.Confirmation = "approved by " + cmp.Or(it.DecidedBy, by) + ", pending " + id
	return true
}
