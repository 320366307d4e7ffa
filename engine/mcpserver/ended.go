package mcpserver

import (
	"context"
	"errors"
)

// A session's calls waiting for a person — the approval of a call asked
// by form elicitation, an upstream's question put to the client or to
// the approval page — end at once when the session ends: the answer can
// no longer arrive on it (its POST is refused), and the SDK's Close
// waits for its calls, so that the call, and Close with it, would have
// waited the whole elicitTimeout. Each is answered on its own POST with
// why, and nothing is sent.

// SessionEndedError is why a call's wait for a person ended: its session
// ended.
type SessionEndedError struct{ Reason string }

func (e *SessionEndedError) Error() string {
	return "the MCP session ended while the call waited for an answer (" + e.Reason + "); nothing was sent"
}

var (
	errTokenChanged = &SessionEndedError{Reason: "its token was revoked or expired, or its permissions changed"}
	errDeleted      = &SessionEndedError{Reason: "the client ended it"}
)

// end ends the session's waits for a person with why; the first why
// holds.
func (ss *session) end(why error) {
	ss.endedCtx()
	ss.stop(why)
}

// endedCtx is the context the session's end cancels, made at its first
// need.
func (ss *session) endedCtx() context.Context {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.ended == nil {
		ss.ended, ss.stop = context.WithCancelCause(context.Background())
	}
	return ss.ended
}

// untilEnded is ctx, also cancelled, with the session's end as its
// cause, when the session ends: a wait for a person.
func (ss *session) untilEnded(ctx context.Context) (context.Context, context.CancelFunc) {
	ended := ss.endedCtx()
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(ended, func() { cancel(context.Cause(ended)) })
	return ctx, func() {
		unhook()
		cancel(context.Canceled)
	}
}

// endedBy is the session's end that ended ctx (untilEnded), nil when
// none did.
func endedBy(ctx context.Context) *SessionEndedError {
	e, _ := errors.AsType[*SessionEndedError](context.Cause(ctx))
	return e
}
