package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/plugins"
)

// An upstream's question during the call of a client of 2026-07-28 (issue
// 48 point 4). Such a client has no stream to be asked on: it is asked by
// input_required, under the rules of the engine's own multi round-trip
// requests (mrtr.go: a sealed state bound to the token, user, endpoint,
// tool and arguments, single-use across replicas, expiring). The upstream
// call cannot be answered meanwhile, so it runs on — parked — on the
// replica that holds it, waiting for the answer at most as long as the
// call itself may take (the executor's timeout bounds the upstream call,
// questions included).
//
// The question is a pending item (Inbox, in the database every replica
// shares), bounded in number per user like every other: a parked call
// outlives the request that started it, so the bound on requests in
// flight does not count it. The retry, on any replica, writes the answer
// into the item; the holding replica's call, reading its item, takes it;
// what the call does next — its result, or its next question — is
// written back into the item, the result sealed, for the retry to answer.
// An upstream that is itself of 2026-07-28 asks the engine by
// input_required too: the engine's MCP client answers it from the same
// asker, so its requestState never leaves the engine.

// An Inbox keeps an upstream's questions as pending items, in the
// database every replica shares (*api.Questions): the approval page's,
// and those a client of 2026-07-28 is asked by input_required.
type Inbox interface {
	// Post stores q, of the call by made, as a question waiting for the
	// person, and returns its id; an error when the pending items'
	// bounds refuse it (it says which).
	Post(ctx context.Context, by string, q engine.Question) (string, error)
	// Await waits for the answer to the question id until ctx ends; the
	// question is then closed and answered cancel.
	Await(ctx context.Context, id string) (engine.Answer, error)
	// Answer records by's answer to the question id: false when it was
	// answered, or closed, before.
	Answer(ctx context.Context, id, by string, a engine.Answer) (bool, error)
	// Question reads the question id as it was posted, and until when
	// the call that asked it may wait.
	Question(ctx context.Context, id string) (engine.Question, time.Time, error)
	// SetOutcome and Outcome keep what the call did after the question
	// id was answered (nil: nothing yet).
	SetOutcome(ctx context.Context, id string, outcome []byte) error
	Outcome(ctx context.Context, id string) ([]byte, error)
}

// modeUpstream is the state mode of an upstream's question.
const modeUpstream = "upstream"

// inputUpstream is the key of an upstream's question in inputRequests.
const inputUpstream = "upstream"

// outcomePoll is how often a retry reads what the call did next;
// outcomeGrace how long past the call's own deadline it waits for it
// (the holding replica writes it as the call ends).
const (
	outcomePoll  = 100 * time.Millisecond
	outcomeGrace = 5 * time.Second
)

// parkedCall is a call running on for a client of 2026-07-28 that may be
// asked the upstream's questions.
type parkedCall struct {
	first chan posted   // the first question, to the request waiting on the call (room for one)
	done  chan struct{} // closed once res and err are set
	res   sdk.Result
	err   error

	mu    sync.Mutex
	last  string // the question the client was last asked: what the call does next is written there
	ended bool   // the call ended: no question is handed off after
}

// posted is a question stored as a pending item.
type posted struct {
	id string
	q  engine.Question
}

// asks reports whether a call of e by client may park: an imported MCP
// tool (the only kind an upstream can ask during) called by a client of
// 2026-07-28 that declared elicitation, with a key to seal states and an
// Inbox to keep the questions in.
func (ss *session) asks(e *entry, client peer) bool {
	form, urlMode := elicitation(client)
	return e.plugin.Execution.Type == plugins.TypeMCP && (form || urlMode) && ss.modern(client) && ss.svc.opts.Inbox != nil
}

// by names the session's user as who made a call, for the pending items.
func (ss *session) by() string { return fmt.Sprintf("mcp:user:%d", ss.user) }

// sendParked sends plan in a call that may park on a question, and
// renders what comes first: its result, or the question as
// input_required.
func (ss *session) sendParked(ctx context.Context, e *entry, args json.RawMessage, plan *engine.Plan, client peer, st *requestState) (sdk.Result, error) {
	form, urlMode := elicitation(client)
	inbox := ss.svc.opts.Inbox
	// The call outlives this request (it may park); the engine shutting
	// down (Service.Close) ends it.
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ss.svc.closing, cancel)
	pc := &parkedCall{first: make(chan posted, 1), done: make(chan struct{})}
	ask := func(ctx context.Context, q engine.Question) (engine.Answer, error) {
		id, err := inbox.Post(ctx, ss.by(), q)
		if err != nil {
			return engine.Answer{}, err
		}
		if undeclared(q, form, urlMode) == nil { // else on the approval page only
			if err := ss.handOff(ctx, pc, posted{id, q}); err != nil {
				// The question stays on the approval page; a retry may
				// wait for an outcome in vain until the call's time.
				ss.svc.log.ErrorContext(ctx, "an upstream question not handed to the MCP client", "pending", id, "err", err)
			}
		}
		return inbox.Await(ctx, id) // closed and answered cancel when ctx ends
	}
	ss.svc.parkedCalls.Add(1)
	go func() {
		defer ss.svc.parkedCalls.Done()
		defer stop()
		defer cancel()
		res, err := ss.svc.ex.Send(engine.WithAsker(callCtx, ask), plan)
		out, cerr, ok := ss.connect(callCtx, e, args, res, client, st)
		if !ok {
			out, cerr = result(res, err), nil
		}
		// Whether the call's end is the request's to answer or the
		// retry's to read is decided under the lock the hand-off takes:
		// a question handed off is one the client will retry.
		pc.mu.Lock()
		last := pc.last
		pc.ended = true
		pc.mu.Unlock()
		if last == "" {
			pc.res, pc.err = out, cerr
		} else if err := ss.setOutcome(context.WithoutCancel(callCtx), last, outcome{Result: out, Err: cerr}); err != nil {
			ss.svc.log.ErrorContext(callCtx, "an upstream question's outcome not recorded: the retry waits for it in vain", "pending", last, "err", err)
		}
		close(pc.done)
	}()
	select {
	case <-pc.done:
		select {
		case p := <-pc.first: // handed off before the call ended: the retry reads the end
			return ss.asked(e, args, p)
		default:
			return pc.res, pc.err
		}
	case p := <-pc.first:
		return ss.asked(e, args, p)
	case <-ctx.Done():
		cancel()
		<-pc.done
		if pc.res == nil && pc.err == nil { // a question was handed off: its item holds the end
			return nil, ctx.Err()
		}
		return pc.res, pc.err
	}
}

// handOff gives the question p to the client: the first to the request
// that started the call, a later one as what the call did after the
// question before was answered.
func (ss *session) handOff(ctx context.Context, pc *parkedCall, p posted) error {
	pc.mu.Lock()
	last, ended := pc.last, pc.ended
	if last == "" && !ended {
		// Handed off and named the last under one lock, so that the
		// call's end (which reads last under it) is written where the
		// client's retry will look, however soon the call ends.
		pc.first <- p // room for one: only the first question comes here
		pc.last = p.id
	}
	pc.mu.Unlock()
	switch {
	case ended:
		return errors.New("the call ended")
	case last == "":
		return nil
	}
	if err := ss.setOutcome(ctx, last, outcome{Next: p.id}); err != nil {
		return err
	}
	pc.mu.Lock()
	pc.last = p.id
	pc.mu.Unlock()
	return nil
}

// asked answers the question p as input_required, with a state naming it.
func (ss *session) asked(e *entry, args json.RawMessage, p posted) (sdk.Result, error) {
	state, err := ss.stateFor(e, args, nil, p.id, modeUpstream)
	if err != nil {
		ss.svc.log.Error("MCP input_required not answered", "err", err)
		return errorResult("the upstream's question cannot be put to you at the moment: " + err.Error()), nil
	}
	return inputRequired{&sdk.CallToolResult{InputRequests: sdk.InputRequestMap{inputUpstream: elicitParams(p.q)}, RequestState: state}}, nil
}

// outcome is what a parked call did after a question was answered: it
// asked the next (Next, a pending item), or it ended (Result, Err).
type outcome struct {
	Next   string
	Result sdk.Result
	Err    error
}

// storedOutcome is an outcome as the Inbox keeps it; Result is sealed
// (the tool's result, masked, is the user's to read alone).
type storedOutcome struct {
	Next          string `json:"next,omitempty"`
	Result        string `json:"result,omitempty"`
	InputRequired bool   `json:"input_required,omitempty"`
	Error         string `json:"error,omitempty"`
}

// resultAAD names a sealed result, so that it never opens as a state.
var resultAAD = []byte("blindexec mcp parked result v1")

func (ss *session) setOutcome(ctx context.Context, id string, o outcome) error {
	so := storedOutcome{Next: o.Next}
	if o.Err != nil {
		so.Error = o.Err.Error()
	}
	if o.Result != nil {
		var c *sdk.CallToolResult
		switch r := o.Result.(type) {
		case inputRequired:
			c, so.InputRequired = r.CallToolResult, true
		case *sdk.CallToolResult:
			c = r
		default:
			return fmt.Errorf("a result of type %T cannot be kept", o.Result)
		}
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if so.Result, err = ss.svc.opts.RoundTrips.sealBytes(b, resultAAD); err != nil {
			return err
		}
	}
	b, err := json.Marshal(so)
	if err != nil {
		return err
	}
	return ss.svc.opts.Inbox.SetOutcome(ctx, id, b)
}

// resume gives a retry's answer to the question its state names, on
// whichever replica the call is held, and answers what the call does
// next. An answer given first on the approval page counts; this one is
// then not sent.
func (ss *session) resume(ctx context.Context, e *entry, args json.RawMessage, st *requestState, in *retry) (sdk.Result, error) {
	inbox := ss.svc.opts.Inbox
	if inbox == nil {
		return errorResult("the call that asked this question is no longer held: call the tool again without requestState"), nil
	}
	ans := engine.Answer{Action: "cancel", By: ss.answerer(engine.RouteInputRequired)}
	if r, ok := in.responses[inputUpstream].(*sdk.ElicitResult); ok {
		ans.Action, ans.Content = r.Action, r.Content
	}
	// The answer is the question's as the approval page's is (Check):
	// content only with an accepted one; one the question did not ask
	// for is not recorded, and the client is asked again (a fresh state),
	// the question still waiting.
	if ans.Action != "accept" {
		ans.Content = nil
	}
	q, _, err := inbox.Question(ctx, st.Pending)
	if err != nil {
		return errorResult("the call that asked this question is no longer held: call the tool again without requestState"), nil
	}
	if err := q.Check(ans); err != nil {
		ss.svc.log.InfoContext(ctx, "an answer to an upstream's question refused; asked again", "pending", st.Pending, "err", err)
		return ss.asked(e, args, posted{st.Pending, q})
	}
	if _, err := inbox.Answer(ctx, st.Pending, ss.by(), ans); err != nil {
		ss.svc.log.ErrorContext(ctx, "an upstream question's answer not recorded", "pending", st.Pending, "err", err)
		return errorResult("your answer cannot be recorded at the moment; nothing was sent upstream: call the tool again"), nil
	}
	return ss.next(ctx, e, args, st.Pending)
}

// next waits for what the call did after the question id was answered,
// reading the Inbox, and renders it.
func (ss *session) next(ctx context.Context, e *entry, args json.RawMessage, id string) (sdk.Result, error) {
	inbox := ss.svc.opts.Inbox
	_, until, err := inbox.Question(ctx, id)
	if err != nil {
		return errorResult("the call that asked this question is no longer held: call the tool again without requestState"), nil
	}
	t := time.NewTicker(outcomePoll)
	defer t.Stop()
	for {
		b, err := inbox.Outcome(ctx, id)
		if err != nil {
			ss.svc.log.WarnContext(ctx, "an upstream question's outcome not read; read again", "pending", id, "err", err)
		}
		if b != nil {
			return ss.rendered(ctx, e, args, b)
		}
		if time.Now().After(until.Add(outcomeGrace)) {
			return errorResult("the call that asked this question ended without saying what it did (the engine holding it stopped): call the tool again without requestState"), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// rendered is a stored outcome as the client reads it.
func (ss *session) rendered(ctx context.Context, e *entry, args json.RawMessage, b []byte) (sdk.Result, error) {
	var so storedOutcome
	if err := json.Unmarshal(b, &so); err != nil {
		return nil, fmt.Errorf("an upstream question's outcome: %w", err)
	}
	if so.Next != "" {
		q, _, err := ss.svc.opts.Inbox.Question(ctx, so.Next)
		if err != nil {
			return nil, fmt.Errorf("the upstream's next question: %w", err)
		}
		return ss.asked(e, args, posted{so.Next, q})
	}
	var res sdk.Result
	if so.Result != "" {
		plain, err := ss.svc.opts.RoundTrips.openBytes(so.Result, resultAAD)
		if err != nil {
			return nil, fmt.Errorf("an upstream question's outcome: %w", err)
		}
		c := new(sdk.CallToolResult)
		if err := json.Unmarshal(plain, c); err != nil {
			return nil, fmt.Errorf("an upstream question's outcome: %w", err)
		}
		res = c
		if so.InputRequired {
			res = inputRequired{c}
		}
	}
	if so.Error != "" {
		return res, errors.New(so.Error)
	}
	return res, nil
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
