package mcpserver

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/blindexec/blindexec/engine"
)

// An upstream MCP server's questions during a call (issue 48 point 4), as
// the executor passes them on (engine.Prepared.Ask): a client of 2025 that
// declared elicitation is asked in its own session, the question as the
// upstream wrote it — its requestedSchema whole, defaults and enums
// included — with a message that names the MCP server asking, and the
// server's name in _meta (metaServer). A client that cannot be asked
// (none declared, not the mode asked, no stream to ask on) has the
// question put on the approval page (Options.Inbox), or, without one,
// is not waited for: the upstream gets an error at once.

// metaServer names, in an elicitation's _meta, the MCP server asking.
const metaServer = "io.blindexec/mcpServer"

// streamWait bounds how long a question waits for the client's GET
// stream, which a client opens right after initialize and which carries
// the engine's requests to it (holdsStream): a call made at once may run
// ahead of it.
const streamWait = 2 * time.Second

// asking returns ctx whose calls' upstream questions are put to client,
// when it declared elicitation of the question's mode and can be asked,
// or else to the person on the approval page (the Inbox): a client of
// 2026-07-28 is asked by input_required (sendParked), or on the page.
// Without an Inbox, a question the client cannot be asked is refused.
func (ss *session) asking(ctx context.Context, client peer) context.Context {
	form, urlMode := elicitation(client)
	if speaksStateless(client) {
		form, urlMode = false, false
	}
	if !form && !urlMode && ss.svc.opts.Inbox == nil {
		return ctx
	}
	return engine.WithAsker(ctx, func(ctx context.Context, q engine.Question) (engine.Answer, error) {
		ctx, cancel := ss.untilEnded(ctx)
		defer cancel()
		if err := undeclared(q, form, urlMode); err != nil {
			return ss.onPage(ctx, q, err)
		}
		if !ss.direct && !ss.awaitStream(ctx, client.ID()) {
			return ss.onPage(ctx, q, &engine.NobodyToAskError{Reason: "the MCP client has no stream open to be asked on"})
		}
		ctx, cancelTimeout := context.WithTimeout(ctx, elicitTimeout)
		defer cancelTimeout()
		res, err := client.Elicit(ctx, elicitParams(q))
		if ended := endedBy(ctx); ended != nil {
			return engine.Answer{}, ended
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return engine.Answer{}, errors.New("the person did not answer in time")
			}
			return engine.Answer{}, errors.New("the MCP client did not answer: " + err.Error())
		}
		return engine.Answer{Action: res.Action, Content: res.Content, By: ss.answerer(engine.RouteElicitation)}, nil
	})
}

// answerer is the session's person answering by route, for the audit
// log.
func (ss *session) answerer(route string) *engine.Answerer {
	return &engine.Answerer{Actor: "user " + strconv.FormatInt(ss.user, 10), Via: "mcp", Route: route}
}

// onPage puts q to the person on the approval page and waits for the
// answer within the call's time; without an Inbox, q is refused (why).
func (ss *session) onPage(ctx context.Context, q engine.Question, why error) (engine.Answer, error) {
	inbox := ss.svc.opts.Inbox
	if inbox == nil {
		return engine.Answer{}, why
	}
	id, err := inbox.Post(ctx, ss.by(), q)
	if err != nil {
		return engine.Answer{}, err
	}
	a, err := inbox.Await(ctx, id)
	if ended := endedBy(ctx); ended != nil {
		return engine.Answer{}, ended
	}
	return a, err
}

// awaitStream reports whether the HTTP session id holds its GET stream,
// waiting up to streamWait for it.
func (ss *session) awaitStream(ctx context.Context, id string) bool {
	deadline := time.Now().Add(streamWait)
	for !ss.svc.holdsStream(id) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// undeclared refuses q when the client did not declare its mode.
func undeclared(q engine.Question, form, urlMode bool) error {
	if q.Mode == engine.QuestionURL && !urlMode || q.Mode == engine.QuestionForm && !form {
		return &engine.NobodyToAskError{Reason: "the MCP client did not declare " + q.Mode + "-mode elicitation"}
	}
	return nil
}
