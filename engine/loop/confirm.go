package loop

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
)

// Pending is a call waiting for a person. Of kind confirmation: the
// exact request the engine prepared (credential values masked), bound by
// Digest to what it was prepared from. Of kind authorization: the
// provider the user must connect an account at first, the scopes the
// tool needs (and those the user's connection lacks), and a start URL
// to open in the user's browser.
type Pending struct {
	ID         string              `json:"id"`
	Kind       string              `json:"kind"`
	Tool       string              `json:"tool"`
	ToolCallID string              `json:"tool_call_id"`
	Arguments  json.RawMessage     `json:"arguments"`
	Request    *engine.SentRequest `json:"request,omitempty"`
	ExpiresAt  time.Time           `json:"expires_at"`
	// Provider, Scopes, MissingScopes and URL are an authorization's.
	Provider      string   `json:"provider,omitempty"`
	Scopes        []string `json:"scopes,omitempty"`
	MissingScopes []string `json:"missing_scopes,omitempty"`
	URL           string   `json:"url,omitempty"`
	// Digest binds a decision to the request (engine.Preview.Digest).
	Digest string `json:"-"`
}

// Saved is what resuming a paused run needs besides the request: the
// conversation up to the pause and the turn that paused. It holds no
// credential (the tool results in it were masked by the executor).
type Saved struct {
	Model    string                         `json:"model"`
	Messages []openai.ChatCompletionMessage `json:"messages"`
	Turn     int                            `json:"turn"`
	// Reply is the run's reply so far: messages, steps and usage.
	Reply *Reply `json:"reply"`
}

// Decision is what a person decided about a pending call.
type Decision struct {
	Pending
	Outcome string    `json:"outcome"` // confirm.Approved, Denied, Expired, Continued or Cancelled
	Reason  string    `json:"reason,omitempty"`
	By      string    `json:"by,omitempty"`
	At      time.Time `json:"at"`
}

// StepDecision is on a Step whose call waited for a person: the outcome
// (confirm.Approved, Denied, Expired, Stale), who decided and when.
type StepDecision struct {
	PendingID string    `json:"pending_id"`
	Outcome   string    `json:"outcome"`
	By        string    `json:"by,omitempty"`
	At        time.Time `json:"at"`
}

// setPolicy sets the run's policy: the operator's, or more when the
// payload asks (options.confirm), never less.
func (s *state) setPolicy() *RunError {
	base := cmp.Or(s.r.Confirm, confirm.Never)
	p, err := base.Stricter(s.req.Options.Confirm)
	if err != nil {
		return &RunError{Code: CodeInvalidRequest, Message: "options.confirm: " + err.Error()}
	}
	s.policy = p
	return nil
}

// held is the outcome of a call the decision holds for a person: the
// pending item shows the request prepared, bound by its digest.
func (s *state) held(st Step, plan *engine.Plan) outcome {
	return outcome{step: st, pending: &Pending{
		ID:         confirm.NewID(),
		Kind:       confirm.KindConfirmation,
		Tool:       st.Tool,
		ToolCallID: st.ToolCallID,
		Arguments:  st.Arguments,
		Request:    plan.Person.Request,
		ExpiresAt:  time.Now().Add(cmp.Or(s.r.ConfirmTTL, confirm.DefaultTTL)).UTC().Truncate(time.Millisecond),
		Digest:     plan.Person.Digest,
	}}
}

// pause ends the run as paused on the pending calls of turn.
func (s *state) pause(model string, msgs []openai.ChatCompletionMessage, turn int) *Reply {
	s.reply.Pending = s.pending
	saved := *s.reply // without Saved: it would hold itself
	s.reply.Saved = &Saved{Model: model, Messages: msgs, Turn: turn, Reply: &saved}
	return s.end(StatusPaused, nil)
}

// Resume goes on with a paused run: req is the run's request again
// (its credentials given anew: none were kept), saved what the pause
// saved, and decisions one per pending call. An approved call is sent
// when the request prepared now has the digest the person approved —
// exactly the request shown, sent once, never retried — and is told to
// the model as stale otherwise; a denied or expired one answers the
// model that nothing was sent. An authorization the user continued
// (having connected the account) makes its call; one cancelled or
// expired answers the model that the user did not connect. A call that
// waits again — for a confirmation, or a fresh authorization when the
// user has still not connected — pauses the run again on the same
// turn; otherwise the model goes on.
func (r *Runner) Resume(ctx context.Context, req Request, saved *Saved, decisions []Decision, emit func(Event)) *Reply {
	if emit == nil {
		emit = func(Event) {}
	}
	reply := saved.Reply
	reply.Pending, reply.Error, reply.Saved = nil, nil, nil
	s := &state{r: r, req: req, emit: emit, log: cmp.Or(r.Logger, slog.Default()).With("run", reply.RunID), reply: reply}
	if err := req.Validate(); err != nil {
		return s.end(StatusFailed, &RunError{Code: CodeInvalidRequest, Message: err.Error()})
	}
	if err := s.bind(); err != nil {
		return s.end(StatusFailed, err)
	}
	if err := s.setPolicy(); err != nil {
		return s.end(StatusFailed, err)
	}
	if err := s.offer(ctx); err != nil {
		return s.end(StatusFailed, err)
	}
	msgs := saved.Messages
	for _, d := range decisions {
		st := Step{Index: len(s.reply.Steps) + 1, Turn: saved.Turn, Tool: d.Tool, ToolCallID: d.ToolCallID, Arguments: d.Arguments}
		out := s.decided(ctx, st, d)
		if out.pending != nil { // waits again: a confirmation after the user connected, or still not connected
			s.pending = append(s.pending, *out.pending)
			continue
		}
		s.emit(Event{EventToolCompleted, out.step})
		s.reply.Steps = append(s.reply.Steps, out.step)
		m := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: out.content, ToolCallID: d.ToolCallID}
		msgs = append(msgs, m)
		s.reply.Messages = append(s.reply.Messages, m)
	}
	if len(s.pending) > 0 {
		return s.pause(saved.Model, msgs, saved.Turn)
	}
	return s.turns(ctx, saved.Model, msgs, saved.Turn+1)
}

// decided is the outcome of one decided call.
func (s *state) decided(ctx context.Context, st Step, d Decision) outcome {
	st.Decision = &StepDecision{PendingID: d.ID, Outcome: d.Outcome, By: d.By, At: d.At}
	if d.Kind == confirm.KindAuthorization {
		return s.authorized(ctx, st, d)
	}
	if d.Outcome != confirm.Approved {
		st.Status = StepRefused
		st.Error = "not_confirmed: " + d.Outcome
		return outcome{step: st, content: confirm.Declined(d.Outcome, d.Reason)}
	}
	if s.offered[d.Tool] == nil {
		st.Decision.Outcome = confirm.Stale
		st.Status, st.Error = StepRefused, "not_confirmed: "+confirm.Stale
		return outcome{step: st, content: confirm.Declined(confirm.Stale, "")}
	}
	// Decided again, as the run's owner, with the approval: sent only when
	// the request prepared now is the one approved.
	out, plan := s.decide(ctx, st, string(d.Arguments), &engine.Approval{PendingID: d.ID, Digest: d.Digest, By: cmp.Or(d.By, "?")})
	if plan == nil {
		return out
	}
	s.emit(Event{EventToolStarted, ToolStarted{Index: st.Index, Turn: st.Turn, Tool: st.Tool, ToolCallID: st.ToolCallID, Arguments: st.Arguments}})
	return s.send(ctx, st, plan)
}
