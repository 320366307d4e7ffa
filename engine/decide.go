package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
)

// Every call, whatever route it came by, passes one decision here, on the
// plugin the call is, in one order (issue 44):
//
//  1. bind: an inline copy of a catalog row using stored credentials is
//     the row (auth.Catalog.Bind), unless the administrator owns the
//     work; an inline plugin left unbound keeps its caller's rights;
//  2. who may use the plugin (the access rule, issue 46), within the
//     agent the call names, if any: a plugin outside it is refused;
//  3. a connection needed: a user without a working account at the
//     plugin's provider connects first;
//  4. confirmation: under the call's policy, the plugin bound (its
//     catalog classification, or an unbound inline plugin's as its owner
//     may set it) says whether a person approves the call; the request
//     is then prepared once, shown masked and bound by a digest, and an
//     approval counts for that digest only;
//  5. quota, counted when the plan is sent (Send), so that a plan never
//     sent holds no allowance;
//  6. send: exactly the request decided.
//
// Entry points only render the verdict: a 409, a tool error, an
// elicitation, a paused step.

// Owner is the kind of principal owning the work a call is part of.
type Owner uint8

// Owners, least trusted first.
const (
	// OwnerUser: a per-user token, an MCP client's user. Its inline
	// plugins are bound to the catalog; their own classification is
	// ignored (derived from the method).
	OwnerUser Owner = iota
	// OwnerService: RuoYi's service token. Its inline plugins are bound;
	// an unbound one's classification stands.
	OwnerService
	// OwnerAdmin: the administrator, who defines the catalog: its inline
	// plugins are not bound.
	OwnerAdmin
)

// Approval is a person's approval of a prepared request: the pending
// item's id, the digest approved and who approved it.
type Approval struct {
	PendingID, Digest, By string
}

// confirmation is what the execution record says of an approval.
func (a *Approval) confirmation() string {
	return "approved by " + a.By + ", pending " + a.PendingID
}

// Verdict is what the decision about a call says.
type Verdict uint8

// Verdicts.
const (
	// VerdictSend: Send sends the prepared request.
	VerdictSend Verdict = iota
	// VerdictRefused: nothing may be sent (the *RefusedError Decide
	// returned; recorded).
	VerdictRefused
	// VerdictConnect: refused for want of the user's connection
	// (CodeConnectionRequired, NeededConnection); recorded.
	VerdictConnect
	// VerdictPerson: a person approves the request first (Plan.Person).
	VerdictPerson
)

// Plan is a decided call: the one plugin it is, the call prepared and the
// verdict.
type Plan struct {
	// Plugin is the plugin the call is: the catalog row an inline copy
	// bound to, or the plugin given; nil when refused before binding.
	Plugin *plugins.Plugin
	// Person is, for VerdictPerson, the request a person approves: masked,
	// with the digest an approval names.
	Person *Preview

	verdict      Verdict // only the decision sets it (and Approve)
	call         Call
	prep         *Prepared
	refused      *RefusedError
	start        time.Time
	confirmation string
	// approved is the approval Approve recorded: Send decides the call
	// again with it, since the person may have answered minutes after the
	// decision (the rule as it is when the request goes out).
	approved *Approval
	// res is the call's Result, allocated with the plan.
	res Result
}

// Verdict is what the decision said.
func (p *Plan) Verdict() Verdict { return p.verdict }

// Approve marks a plan waiting for a person as approved by by under the
// pending item id: the caller matched an approval of exactly
// Plan.Person.Digest. Send decides the call again with that approval
// (Call.Approval): sent once, only if the request prepared then is the
// one approved and every rule still lets it through.
func (p *Plan) Approve(by, id string) {
	if p.verdict != VerdictPerson {
		return
	}
	p.verdict = VerdictSend
	p.approved = &Approval{PendingID: id, Digest: p.Person.Digest, By: by}
}

// Result is the Result of a refused plan (recorded, with its execution
// id); nil before Send for any other.
func (p *Plan) Result() *Result {
	if p.refused == nil {
		return nil
	}
	return &p.res
}

// allowed is the decision's access step: whether the call's user may use
// p, the plugin bound. An inline plugin left unbound is judged as the
// enabled row of its name when there is one, so that a copy cannot
// escape the row's perms; else as itself, a user's stripped of the perms
// it declares (a caller does not say what its own plugin needs), so that
// under access.ModePerms it is refused.
func (e *Executor) allowed(ctx context.Context, call *Call, p *plugins.Plugin) *RefusedError {
	if e.Access == nil {
		if call.Agent != "" {
			// No rule to judge the agent by: refused, never let through
			// with the whole catalog.
			return refuse(CodePermissionsUnavailable, "the call names agent %q, but this engine has no access rule to judge it by; nothing was sent", call.Agent)
		}
		return nil
	}
	if call.Inline && p == call.Plugin {
		var row *plugins.Plugin
		if e.Catalog != nil {
			var err error
			if row, err = e.Catalog.Row(ctx, p.Name); err != nil {
				return refuse(CodePermissionsUnavailable, "the catalog could not be read to judge who may use %s, so the call is refused: %v", p.Name, err)
			}
		}
		switch {
		case row != nil:
			p = row
		case call.Owner == OwnerUser && len(p.Perms) > 0:
			c := *p
			c.Perms = nil
			p = &c
		}
	}
	narrow, refused := e.narrow(ctx, call)
	if refused != nil {
		return refused
	}
	err := e.Access.Allowed(ctx, access.Subject{User: call.UserID, Narrow: narrow, Agent: call.Agent}, p)
	if err == nil {
		return nil
	}
	if denied, ok := errors.AsType[*access.DeniedError](err); ok {
		details := map[string]any{"plugin": call.Plugin.Name, "needs": slices.Clone(denied.Needs)}
		if denied.Agent != "" {
			details["agent"] = denied.Agent
		}
		return &RefusedError{ToolError{Code: CodePermissionDenied, Message: denied.Error(), Details: details}}
	}
	if ae, ok := errors.AsType[*catalog.AgentError](err); ok {
		return &RefusedError{ToolError{Code: ae.Code(), Message: ae.Error(), Details: map[string]any{"agent": ae.Name}}}
	}
	return &RefusedError{ToolError{Code: CodePermissionsUnavailable, Message: err.Error(),
		Details: map[string]any{"retry_after_s": DefaultRetryAfter.Seconds()}}}
}

// narrow is the call's sources of strings besides the user's: its
// token's fixed perms as they are now (Call.Token), then Narrow.
func (e *Executor) narrow(ctx context.Context, call *Call) ([]access.Held, *RefusedError) {
	if call.Token == 0 {
		return call.Narrow, nil
	}
	if e.Tokens == nil {
		return nil, refuse(CodePermissionsUnavailable, "the call names a token, but this engine cannot read tokens; nothing was sent")
	}
	held, err := e.Tokens.Perms(ctx, call.UserID, call.Token)
	if err != nil {
		return nil, &RefusedError{ToolError{Code: CodePermissionsUnavailable, Message: "the call's token could not be read, so the call is refused: " + err.Error(),
			Details: map[string]any{"retry_after_s": DefaultRetryAfter.Seconds()}}}
	}
	if held == nil {
		return call.Narrow, nil
	}
	return append([]access.Held{held}, call.Narrow...), nil
}

// Decide decides call: bind, access, connection, confirmation (see the
// order above). A refusal is recorded, counted and returned as a
// *RefusedError beside a plan whose Result carries it; a plan waiting for
// a person has sent and recorded nothing. A call that needs no person is
// prepared once and pays no digest.
func (e *Executor) Decide(ctx context.Context, call Call) (*Plan, error) {
	if call.Plugin == nil {
		return nil, errors.New("engine: Decide without a plugin")
	}
	plan := &Plan{call: call, start: time.Now()}
	plan.res.ExecutionID = uuid.Must(uuid.NewV7()).String()
	if e.Fresh != nil {
		// Said first: past the grace the outage, not the records, is why.
		if err := e.Fresh(); err != nil {
			return plan, e.refuse(ctx, plan, refuse(CodeDatabaseUnavailable, "%v; nothing was sent", err))
		}
	}
	if e.Recorder != nil {
		if err := e.Recorder.Admit(); err != nil {
			// Not recorded: the records are what is unavailable.
			plan.verdict = VerdictRefused
			plan.refused = refuse(CodeRecordsUnavailable, "the engine cannot record calls at the moment, so it makes none: %v", err)
			plan.res.Error = &plan.refused.ToolError
			e.Metrics.observe(call.Plugin, CodeRecordsUnavailable, time.Since(plan.start))
			return plan, plan.refused
		}
	}
	refused := e.current(ctx, &plan.call)
	var prep *Prepared
	if refused == nil {
		prep, refused = e.prepare(ctx, plan.call)
	}
	if prep != nil {
		plan.Plugin, plan.prep = prep.Plugin, prep
	}
	if refused == nil {
		refused = e.confirm(ctx, plan)
	}
	if refused != nil {
		return plan, e.refuse(ctx, plan, refused)
	}
	return plan, nil
}

// current makes a call of a catalog plugin a call of the catalog row as
// it is now: a caller holds the rows it was offered (a run for its
// minutes, an MCP tool set, a call waiting for a person), and a row
// disabled, deleted or changed since (its perms, classification,
// execution, credentials) is decided as the catalog now has it, on every
// route within one poll. A row of the name that is another row (deleted,
// then added again) is not the tool the caller was offered: refused.
func (e *Executor) current(ctx context.Context, call *Call) *RefusedError {
	p := call.Plugin
	if !p.Catalog || call.Inline || e.Catalog == nil {
		return nil
	}
	row, err := e.Catalog.Row(ctx, p.Name)
	switch {
	case err != nil:
		return refuse(CodePermissionsUnavailable, "the catalog could not be read to decide the call of %s, so it is refused: %v", p.Name, err)
	case row == nil || row.ID != p.ID:
		return refuse(CodePluginDisabled, "the tool %s is disabled or was removed", p.Name)
	}
	call.Plugin = row
	return nil
}

// Allowed is the decision's access step (step 2 above) on the call's
// plugin as given, and where the user's stored keys may go (elsewhere,
// every key the plugin and its invoker's auth config read: a listing
// takes them all from the store), for a route that must know it before it
// may speak to anyone: the MCP proxy's tool without a catalog row, whose
// parameters only its server can tell, and whose server is not asked with
// the user's credentials for a user refused the tool anyway, nor sent a
// key the catalog sends to another origin (hosts76). A refusal is
// recorded and returned as Decide's is, beside its Result; nil when the
// user may use the plugin, and Decide then decides the call whole.
// destination is the digest of the server row where the keys were judged
// to go ("" when none was): the route asks that row only (onerow81: the
// listing read the row again, and a server registered anew meanwhile was
// sent the keys judged for another).
func (e *Executor) Allowed(ctx context.Context, call Call) (destination string, _ *Result, _ error) {
	if call.Plugin == nil {
		return "", nil, errors.New("engine: Allowed without a plugin")
	}
	refused := e.allowed(ctx, &call, call.Plugin)
	if refused == nil && call.UserID != 0 && e.Credentials != nil {
		// What the route asks the server with is the user's keys its auth
		// reads, all from the store: where they may go is decided as a
		// call's (elsewhere).
		p := call.Plugin
		server := serverRead{inv: e.invokers[p.ExecType()]}
		keys := slices.Concat(p.Credentials(), server.auth(ctx, p).CredentialKeys())
		destination, refused = e.elsewhere(ctx, &call, &server, p, keys)
	}
	if refused == nil {
		return destination, nil, nil
	}
	plan := &Plan{call: call, start: time.Now()}
	plan.res.ExecutionID = uuid.Must(uuid.NewV7()).String()
	return "", &plan.res, e.refuse(ctx, plan, refused)
}

// Usable are those of ps the call's subject may use now: its user, its
// token's perms as they are (Call.Token, read as a call reads them),
// Narrow and its agent — the access step over a list, deciding and
// recording no call. What a run offers its model at each turn, so that a
// token narrowed or widened during the run is offered what it may use
// then. ps are catalog rows (an inline plugin is judged when called, as
// the row of its name). Without an access rule, ps whole, unless the
// call names an agent, which nothing could judge.
func (e *Executor) Usable(ctx context.Context, call Call, ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
	if e.Access == nil {
		if call.Agent != "" {
			return nil, &access.UnavailableError{Source: "agents", Err: access.ErrNoAgents}
		}
		return ps, nil
	}
	narrow, refused := e.narrow(ctx, &call)
	if refused != nil {
		return nil, refused
	}
	return e.Access.Usable(ctx, access.Subject{User: call.UserID, Narrow: narrow, Agent: call.Agent}, ps)
}

// confirm is the decision's connection and confirmation steps: whether
// the plan waits for a person, or is the request a person approved.
func (e *Executor) confirm(ctx context.Context, plan *Plan) *RefusedError {
	call, p := &plan.call, plan.prep.Plugin
	if call.Approval == nil && (call.Policy == "" || !call.Policy.Needs(p)) {
		return nil // sent as decided: nothing to show, no digest to pay
	}
	prev, refused := e.preview(ctx, call, plan.prep)
	switch {
	case refused != nil:
		return refused
	case call.Approval == nil:
		plan.verdict, plan.Person = VerdictPerson, prev
	case prev.Digest != call.Approval.Digest:
		return refuse(CodeConfirmationStale, "the call differs from the one approved (its plugin, its server, arguments or credentials changed); nothing was sent")
	default:
		plan.prep.Once = true
		plan.confirmation = call.Approval.confirmation()
	}
	return nil
}

// classified is p as the confirmation policy and quota rules read it, for
// a call with args (fixed params merged): an inline plugin left unbound
// keeps its own consequential setting (and suggestion) only when the
// service or the administrator owns the work; a user's is derived from
// the method, so that a caller cannot declare its own DELETE harmless. A
// bound call is the row, with the row's setting. Either way the method is
// the one the server reads: a safe call whose request asks for another
// in a method override (plugins.Plugin.ConsequentialWith: the plugin's
// headers and query, its fixed params, the caller's arguments) is
// consequential. p is shared (plugins.ParseJSON caches documents): a
// changed plugin is a copy.
func classified(call *Call, p *plugins.Plugin, args map[string]any) *plugins.Plugin {
	if call.Inline && p == call.Plugin && call.Owner == OwnerUser && (p.Consequential != nil || p.ConsequentialHint != nil) {
		c := *p
		c.Consequential, c.ConsequentialHint = nil, nil
		p = &c
	}
	if p.Consequential == nil && !p.IsConsequential() && p.ConsequentialWith(args) {
		c := *p
		overridden := true
		c.Consequential = &overridden
		p = &c
	}
	return p
}

// refuse records and counts a refusal of plan, made before Send: the
// span is the decision's.
func (e *Executor) refuse(ctx context.Context, plan *Plan, refused *RefusedError) *RefusedError {
	if refused.Code == CodeConnectionRequired {
		plan.verdict = VerdictConnect
	} else {
		plan.verdict = VerdictRefused
	}
	plan.Person = nil
	// A refusal's message may quote arguments, never credentials;
	// masking it is cheap insurance all the same.
	refused.ToolError = *maskError(&refused.ToolError, e.masker(plan.prep))
	plan.refused = refused
	plan.res.Error = &refused.ToolError
	d := time.Since(plan.start)
	plan.res.LatencyMS = d.Milliseconds()
	ctx, span := startToolSpan(ctx, plan.call, plan.start)
	defer span.End()
	e.endToolSpan(span, &plan.res, plan.prep, true)
	e.finish(ctx, plan.call, plan.confirmation, "", &plan.res, true, d)
	return refused
}

// Send sends the plan's request as decided — quota counted first, then
// exactly the request prepared — and returns its Result. A refused plan
// returns its recorded Result and refusal again; a plan waiting for a
// person is an error (nothing is sent).
func (e *Executor) Send(ctx context.Context, plan *Plan) (*Result, error) {
	if plan.approved != nil {
		e.again(ctx, plan)
	}
	switch plan.verdict {
	case VerdictRefused, VerdictConnect:
		return &plan.res, plan.refused
	case VerdictPerson:
		return nil, errors.New("engine: Send of a call waiting for a person")
	}
	call, prep, res := plan.call, plan.prep, &plan.res
	ctx, span := startToolSpan(ctx, call, plan.start)
	defer span.End()
	release, refused := e.admit(call)
	defer release()
	undo := func() {}
	if refused == nil && e.Quota != nil {
		// Here, decided and about to be sent, and nowhere else: a call
		// counts once, its retries with it.
		undo, refused = e.takeQuota(ctx, call.UserID, prep.Plugin)
	}
	if refused == nil {
		ctx, cancel := context.WithTimeout(ctx, e.timeout(call.Plugin))
		resp, err := e.invokers[prep.Plugin.ExecType()].Invoke(ctx, prep)
		cancel()
		if r, ok := errors.AsType[*RefusedError](err); ok { // AsType: refused stays off the heap
			refused = r
			undo() // the invoker refused: nothing was sent
		} else {
			e.complete(res, prep, resp, err)
		}
		if res.Error != nil && res.Error.Code == CodeTransportError {
			// Canceled with a reason (the engine shutting down): the
			// record says which. Asked only then: Cause locks its way up
			// the context chain.
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
				res.Error.Message = "the call was canceled: " + cause.Error()
			}
		}
	}
	if refused != nil {
		refused.ToolError = *maskError(&refused.ToolError, e.masker(prep))
		res.Error = &refused.ToolError
		plan.verdict, plan.refused = VerdictRefused, refused
	}
	d := time.Since(plan.start)
	res.LatencyMS = d.Milliseconds()
	e.endToolSpan(span, res, prep, refused != nil)
	e.finish(ctx, call, plan.confirmation, prep.askedRecord(), res, refused != nil, d)
	if refused != nil {
		return res, refused
	}
	return res, nil
}

// again decides an approved plan again, with its approval, as it is
// sent: a tool disabled, a permission withdrawn or a request changed
// while the person read the question stops it (the refusal recorded by
// Decide). The plan becomes the new decision.
func (e *Executor) again(ctx context.Context, plan *Plan) {
	call := plan.call
	call.Approval = plan.approved
	now, _ := e.Decide(ctx, call) // never nil: the call has its plugin
	*plan = *now                  // its approved nil: decided once more, not again
}

// Execute decides call and sends it, for a caller without a person to
// ask: a call whose policy wants one is refused (CodeConfirmationRequired)
// and recorded as such. The Result is always non-nil for a non-nil
// plugin; the error is a *RefusedError when nothing was sent.
func (e *Executor) Execute(ctx context.Context, call Call) (*Result, error) {
	plan, err := e.Decide(ctx, call)
	if plan == nil {
		return nil, err
	}
	if plan.verdict == VerdictPerson {
		return &plan.res, e.refuse(ctx, plan, refuse(CodeConfirmationRequired,
			"%s waits for a person's approval, which this caller cannot ask for; nothing was sent", plan.Plugin.Name))
	}
	return e.Send(ctx, plan)
}
