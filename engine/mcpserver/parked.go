package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/plugins"
)

// An upstream's question during the call of a client of 2026-07-28 (issue
// 48 point 4). Such a client has no stream to be asked on: it is asked by
// input_required, under the rules of the engine's own multi round-trip
// requests (mrtr.go: a sealed state bound to the token, user, endpoint,
// tool and arguments, single-use across replicas, expiring). The upstream
// call cannot be answered meanwhile, so it stays open — parked — on the
// replica that holds it, and the question waits at most as long as the
// call itself may take (the executor's timeout bounds the upstream call,
// questions included). A retry that reaches the replica holding the call
// gives the answer to the upstream and waits for the call again; one that
// reaches another replica, or comes after the call ended, is answered
// with an error saying to call the tool again (without requestState).
// An upstream that is itself of 2026-07-28 asks the engine by
// input_required too: the engine's MCP client answers it from the same
// asker, so its requestState never leaves the engine.

// modeUpstream is the state mode of an upstream's question.
const modeUpstream = "upstream"

// inputUpstream is the key of an upstream's question in inputRequests.
const inputUpstream = "upstream"

// parkedCall is a call running on for a client of 2026-07-28 that may be
// asked the upstream's questions.
type parkedCall struct {
	questions chan *pendingQuestion // from the call, to the request waiting on it
	done      chan struct{}         // closed once res and err are set
	res       sdk.Result
	err       error
	cancel    context.CancelFunc
}

// pendingQuestion is a question put to a client of 2026-07-28, and where
// its answer goes.
type pendingQuestion struct {
	q      engine.Question
	answer chan engine.Answer // buffered: one answer
}

// asks reports whether a call of e by client may park: an imported MCP
// tool (the only kind an upstream can ask during) called by a client of
// 2026-07-28 that declared elicitation, with a key to seal states.
func (ss *session) asks(e *entry, client peer) bool {
	form, urlMode := elicitation(client)
	return e.plugin.Execution.Type == plugins.TypeMCP && (form || urlMode) && ss.modern(client)
}

// sendParked sends plan in a call that may park on a question, and
// renders what comes first: its result, or the question as
// input_required.
func (ss *session) sendParked(ctx context.Context, e *entry, args json.RawMessage, plan *engine.Plan, client peer, st *requestState) (sdk.Result, error) {
	form, urlMode := elicitation(client)
	// The call outlives this request (it may park); the engine shutting
	// down (Service.Close) ends it.
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ss.svc.closing, cancel)
	pc := &parkedCall{questions: make(chan *pendingQuestion), done: make(chan struct{}), cancel: cancel}
	ask := func(ctx context.Context, q engine.Question) (engine.Answer, error) {
		if err := undeclared(q, form, urlMode); err != nil {
			return engine.Answer{}, err
		}
		pq := &pendingQuestion{q: q, answer: make(chan engine.Answer, 1)}
		select {
		case pc.questions <- pq:
		case <-ctx.Done():
			return engine.Answer{}, errors.New("the call ended before the person was asked")
		}
		select {
		case a := <-pq.answer:
			return a, nil
		case <-ctx.Done():
			return engine.Answer{}, errors.New("the person did not answer within the call's time")
		}
	}
	go func() {
		defer stop()
		defer cancel()
		res, err := ss.svc.ex.Send(engine.WithAsker(callCtx, ask), plan)
		if out, cerr, ok := ss.connect(callCtx, e, args, res, client, st); ok {
			pc.res, pc.err = out, cerr
		} else {
			pc.res, pc.err = result(res, err), nil
		}
		close(pc.done)
	}()
	return ss.await(ctx, e, args, pc)
}

// await waits for pc's result or its next question: the question is
// answered input_required with a state naming pc, parked meanwhile. The
// client gone, the call is cancelled.
func (ss *session) await(ctx context.Context, e *entry, args json.RawMessage, pc *parkedCall) (sdk.Result, error) {
	select {
	case <-pc.done:
		return pc.res, pc.err
	case pq := <-pc.questions:
		id := rand.Text()
		state, err := ss.stateFor(e, args, nil, id, modeUpstream)
		if err != nil {
			pq.answer <- engine.Answer{Action: "cancel"}
			ss.svc.log.ErrorContext(ctx, "MCP input_required not answered", "err", err)
			<-pc.done
			return pc.res, pc.err
		}
		ss.svc.parked.Store(id, &parked{pc, pq})
		go func() { // forgotten when the call ends, answered or not
			<-pc.done
			ss.svc.parked.Delete(id)
		}()
		return inputRequired{&sdk.CallToolResult{InputRequests: sdk.InputRequestMap{inputUpstream: elicitParams(pq.q)}, RequestState: state}}, nil
	case <-ctx.Done():
		pc.cancel()
		<-pc.done
		return pc.res, pc.err
	}
}

// parked is a call waiting for the answer to q.
type parked struct {
	call *parkedCall
	q    *pendingQuestion
}

// resume gives a retry's answer to the call its state parked and waits
// for that call again.
func (ss *session) resume(ctx context.Context, e *entry, args json.RawMessage, st *requestState, in *retry) (sdk.Result, error) {
	v, ok := ss.svc.parked.LoadAndDelete(st.Pending)
	if !ok {
		return errorResult("the call that asked this question is no longer held here (it ended, or another replica holds it): call the tool again without requestState"), nil
	}
	p := v.(*parked)
	ans := engine.Answer{Action: "cancel"}
	if r, ok := in.responses[inputUpstream].(*sdk.ElicitResult); ok {
		ans = engine.Answer{Action: r.Action, Content: r.Content}
	}
	p.q.answer <- ans
	return ss.await(ctx, e, args, p.call)
}

// elicitParams is q as an MCP client is asked it: the upstream's
// message prefixed with the server asking, its schema whole, the server's
// name in _meta.
func elicitParams(q engine.Question) *sdk.ElicitParams {
	p := &sdk.ElicitParams{Meta: sdk.Meta{metaServer: q.Server}, Mode: q.Mode, Message: q.Prompt(), URL: q.URL, ElicitationID: q.ElicitationID}
	if len(q.Schema) > 0 {
		p.RequestedSchema = json.RawMessage(q.Schema)
	}
	return p
}
