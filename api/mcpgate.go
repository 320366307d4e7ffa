package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/store"
)

// mcpPrincipal prefixes the principal of an MCP client's pending items:
// the user its session acts for.
const mcpPrincipal = "mcp:user:"

// MCPGate holds the consequential calls of MCP clients (/mcp, `mcp serve
// --stdio`) for a person (issue 33). Such a call is prepared, stored as
// a pending item, and answered at once with a tool error naming it —
// never held open waiting for a person. Once the user approves the item
// (POST /v1/pending/{id}), the same call with the same arguments sends
// exactly the approved request, once. The items live in the database, so
// a stdio server sees decisions made anywhere.
type MCPGate struct {
	Store   *store.Store
	Confirm confirm.Policy // the policy calls are decided under
	TTL     time.Duration  // confirm.DefaultTTL when 0
	// PublicURL is the engine's public URL (BLINDEXEC_PUBLIC_URL): the
	// console's Approvals page is named in what the client is told.
	PublicURL string
	// ViaConsole (BLINDEXEC_CONFIRM_VIA=console): approvals come from the
	// console only, never through the client's elicitation.
	ViaConsole bool
	Metrics    *confirm.Metrics // counts elicitation answers
	Logger     *slog.Logger
}

// Policy implements mcpserver.Gate: the operator's.
func (g *MCPGate) Policy() confirm.Policy { return g.Confirm }

// Hold implements mcpserver.Gate. The executor decided that plan waits
// for a person; a call that needs none was never prepared for one nor
// paid a digest (issue 38). An approval of exactly plan's request
// (its digest) is claimed once and approves the plan.
func (g *MCPGate) Hold(ctx context.Context, call *engine.Call, plan *engine.Plan) *mcpserver.Waiting {
	prev := plan.Person
	principal := mcpPrincipal + strconv.FormatInt(call.UserID, 10)
	// Bounded: a database that stops answering would hold the call for
	// as long as the connection lives; unread, the call fails closed.
	ctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	defer cancel()
	approved, err := g.Store.FindItem(ctx, principal, prev.Digest, confirm.Approved)
	if err == nil && time.Now().Before(approved.ExpireTime) {
		won, err := g.Store.ClaimApproved(ctx, approved.ID)
		if err == nil && won {
			plan.Approve(approved.DecidedBy, approved.ID)
			return nil
		}
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return g.failed(ctx, err)
	}
	it, err := g.Store.FindItem(ctx, principal, prev.Digest, store.PendingWaiting)
	var pending loop.Pending
	switch {
	case err == nil && time.Now().Before(it.ExpireTime):
		if err := json.Unmarshal(it.Item, &pending); err != nil {
			return g.failed(ctx, err)
		}
	case err == nil || errors.Is(err, store.ErrNotFound):
		if pending, err = storeDirectItem(ctx, g.Store, call, prev, principal, g.TTL); err != nil {
			return g.failed(ctx, err)
		}
	default:
		return g.failed(ctx, err)
	}
	w := &mcpserver.Waiting{ID: pending.ID, Elicit: !g.ViaConsole,
		Message: fmt.Sprintf("%s waits for your approval; nothing was sent. It will send: %s %s", pending.Tool, pending.Request.Method, pending.Request.URL)}
	if pending.Request.Body != "" {
		w.Message += " with the body " + pending.Request.Body
	}
	if g.PublicURL != "" {
		w.URL = strings.TrimSuffix(g.PublicURL, "/") + "/console/#/approvals"
	}
	body := map[string]any{
		"code": "confirmation_required",
		"message": fmt.Sprintf("%s changes something on the user's behalf and waits for the user's approval; nothing was sent. "+
			"Tell the user what it will do; once the user has approved it, call the tool again with the same arguments.", pending.Tool),
		"pending": pending,
	}
	if w.URL != "" {
		body["approve_at"] = w.URL
	}
	b, _ := json.Marshal(map[string]any{"error": body})
	w.Text = string(b)
	return w
}

// Decide implements mcpserver.Gate: the person's answer to an
// elicitation, recorded and claimed like any other decision.
func (g *MCPGate) Decide(ctx context.Context, call *engine.Call, plan *engine.Plan, id string, approve bool) bool {
	by := "elicitation:" + mcpPrincipal + strconv.FormatInt(call.UserID, 10)
	outcome := confirm.Denied
	if approve {
		outcome = confirm.Approved
	}
	ctx, cancel := context.WithTimeout(ctx, store.QueryTimeout) // as Hold
	defer cancel()
	won, err := g.Store.DecideItem(ctx, id, outcome, by, "")
	if won {
		g.Metrics.Count(outcome, 1)
		auditElicited(ctx, g.Store, cmp.Or(g.Logger, slog.Default()), call.UserID, id, outcome)
	}
	if err != nil || !won || !approve {
		return false
	}
	if won, err = g.Store.ClaimApproved(ctx, id); err != nil || !won {
		return false
	}
	plan.Approve(by, id)
	return true
}

func (g *MCPGate) failed(ctx context.Context, err error) *mcpserver.Waiting {
	if _, code, msg, details, ok := pendingRefusal(err); ok {
		// The bounds of pending items (issue 44): the tool error says
		// which, and that nothing was sent.
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": msg, "details": details}})
		return &mcpserver.Waiting{Text: string(b)}
	}
	cmp.Or(g.Logger, slog.Default()).ErrorContext(ctx, "confirmation: pending items unavailable", "err", err)
	return &mcpserver.Waiting{Text: `{"error":{"code":"confirmation_unavailable","message":"this call waits for the user's approval, which cannot be recorded at the moment; nothing was sent"}}`}
}

// mayDecide answers 403 and reports false when p's decisions do not
// count: under BLINDEXEC_CONFIRM_VIA=console, only a console session
// opened with a console-only token decides a user's calls (the service
// token still decides runs: RuoYi is its own user interface).
func (s *Server) mayDecide(w http.ResponseWriter, p principal) bool {
	if s.ConfirmVia != "console" || p.browser && p.consoleOnly {
		return true
	}
	writeError(w, http.StatusForbidden, "approval_via_console",
		"BLINDEXEC_CONFIRM_VIA=console: approve in the console, signed in with a console-only token", nil)
	return false
}

// decidePending is POST /v1/pending/{id}: the user's decision about a
// pending direct call (an MCP client's, or one /v1/execute prepared),
// {"decision": "approve"|"deny", "reason"}, or the person's answer to an
// upstream's question (kind "question", answerQuestion), {"action",
// "content"}; the user's own token (one with fixed perms for the tools
// they allow: seen), or the service or admin token (mayDecide).
func (s *Server) decidePending(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Decision string          `json:"decision,omitempty"`
		Reason   string          `json:"reason,omitempty"`
		Action   string          `json:"action,omitempty"`
		Content  json.RawMessage `json:"content,omitempty"`
	}
	if !decodeStrict(w, r, &req) {
		return
	}
	outcome := map[string]string{confirm.Approve: confirm.Approved, confirm.Deny: confirm.Denied}[req.Decision]
	answer, answerOK := answerOf(req.Action, req.Content)
	switch {
	case req.Action != "" && (req.Decision != "" || !answerOK):
		writeError(w, http.StatusBadRequest, "invalid_payload", `an answer is {"action": "accept"|"decline"|"cancel", "content": {...}} (content: an object), without a decision`, map[string]string{"field": "action"})
		return
	case req.Action == "" && (outcome == "" || len(req.Reason) > 500):
		writeError(w, http.StatusBadRequest, "invalid_payload", `decision: expected "approve" or "deny" (reason: at most 500 bytes); a question is answered with "action"`, map[string]string{"field": "decision"})
		return
	}
	p := principalFrom(r.Context())
	if !s.mayDecide(w, p) {
		return
	}
	sn, ok := s.seenOf(w, r)
	if !ok {
		return
	}
	it, err := s.Store.GetPendingItem(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) || err == nil && (it.RunID != "" || !sn.item(it)) {
		writeError(w, http.StatusNotFound, "pending_not_found", "no pending call of yours has this id", nil)
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if it.Status != store.PendingWaiting || time.Now().After(it.ExpireTime) {
		if it.Kind == store.KindQuestion {
			writeError(w, http.StatusConflict, "question_closed", "this question was answered, or the call that asked it ended", map[string]string{"status": it.Status})
		} else {
			writeError(w, http.StatusConflict, "pending_closed", "this call was decided or expired", map[string]string{"status": it.Status})
		}
		return
	}
	if (it.Kind == store.KindQuestion) != (req.Action != "") {
		if req.Action != "" {
			writeError(w, http.StatusBadRequest, "invalid_payload", `this pending call waits for a decision, not an answer: {"decision": "approve"|"deny"}`, map[string]string{"field": "action"})
		} else {
			writeError(w, http.StatusBadRequest, "invalid_payload", `this is an MCP server's question: answer it with {"action": "accept"|"decline"|"cancel", "content": {...}}`, map[string]string{"field": "decision"})
		}
		return
	}
	if it.Kind == store.KindQuestion {
		s.answerQuestion(w, r, it, answer)
		return
	}
	won, err := s.Store.DecideItem(r.Context(), it.ID, outcome, decider(p), req.Reason)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if !won {
		writeError(w, http.StatusConflict, "pending_closed", "this call was decided by another request", nil)
		return
	}
	s.confirmMetrics.Count(outcome, 1)
	writeJSON(w, http.StatusOK, map[string]any{"id": it.ID, "status": outcome})
}

// Close implements mcpserver.Gate: the item closed as cancelled, why as
// its reason, so that it records why the call was not sent.
func (g *MCPGate) Close(ctx context.Context, id, why string) {
	ctx, cancel := context.WithTimeout(ctx, store.QueryTimeout) // as Hold
	defer cancel()
	won, err := g.Store.DecideItem(ctx, id, confirm.Cancelled, "", why)
	if err != nil {
		cmp.Or(g.Logger, slog.Default()).WarnContext(ctx, "a waiting MCP call's end not recorded", "pending", id, "err", err)
	}
	if won {
		g.Metrics.Count(confirm.Cancelled, 1)
	}
}
