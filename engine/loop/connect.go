package loop

import (
	"cmp"
	"context"
	"time"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
)

// Connector starts a connection for a run's user who has no working
// account at a provider (issue 34): a fresh start URL to open in the
// user's browser. The API implements it over connections.Service.
type Connector interface {
	StartURL(ctx context.Context, userID int64, provider string, scopes []string) (string, error)
}

// connect turns a call refused for want of the user's connection into
// an authorization the run waits on: the user connects, then the run
// goes on with the call (POST /v1/runs/{id}/resume, "continue"). ok is
// false — the model reads the error as it is — for any other error,
// without a Connector, or when no start URL can be made.
func (s *state) connect(ctx context.Context, st Step, te *engine.ToolError) (_ outcome, ok bool) {
	provider, scopes, missing, ok := engine.NeededConnection(te)
	if !ok || s.r.Connector == nil {
		return outcome{}, false
	}
	url, err := s.r.Connector.StartURL(ctx, s.req.UserID, provider, scopes)
	if err != nil {
		s.log.Warn("no start URL for a connection the call needs; the model is told", "tool", st.Tool, "provider", provider, "err", err)
		return outcome{}, false
	}
	return outcome{step: st, pending: &Pending{
		ID:            confirm.NewID(),
		Kind:          confirm.KindAuthorization,
		Tool:          st.Tool,
		ToolCallID:    st.ToolCallID,
		Arguments:     st.Arguments,
		ExpiresAt:     time.Now().Add(cmp.Or(s.r.ConfirmTTL, confirm.DefaultTTL)).UTC().Truncate(time.Millisecond),
		Provider:      provider,
		Scopes:        scopes,
		MissingScopes: missing,
		URL:           url,
	}}, true
}

// authorized is the outcome of a decided authorization: after
// "continue" the call is decided and made as the model asked it —
// waiting for a person first when the decision says so, and for a fresh
// authorization again when the user has still not connected — and
// otherwise the model reads that the user did not connect.
func (s *state) authorized(ctx context.Context, st Step, d Decision) outcome {
	if d.Outcome != confirm.Continued {
		st.Status, st.Error = StepRefused, "not_connected: "+d.Outcome
		return outcome{step: st, content: confirm.NotConnected(d.Provider, d.Outcome)}
	}
	out, plan := s.decide(ctx, st, string(d.Arguments), nil)
	if plan == nil {
		return out // refused, or waiting again: for a person, or for the user still not connected
	}
	s.emit(Event{EventToolStarted, ToolStarted{Index: st.Index, Turn: st.Turn, Tool: st.Tool, ToolCallID: st.ToolCallID, Arguments: st.Arguments}})
	return s.send(ctx, st, plan)
}
