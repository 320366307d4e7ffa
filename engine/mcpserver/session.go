package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
)

// pageSize is the most tools one tools/list answer holds.
const pageSize = 1000

// session is one client's session: the user it acts for and the tools its
// searches found. It answers tools/list and tools/call itself from the
// shared tool set; its server's own tool registry mirrors the found tools
// only so that the SDK sends notifications/tools/list_changed when they
// change.
type session struct {
	svc    *Service
	server *sdk.Server
	sessionOptions
	// opened is set once the server has had a session: until then an
	// empty session list is one still connecting, not one ended.
	opened atomic.Bool

	mu    sync.Mutex
	found *toolset.Working // nil until the first search
	// told is the digest of the tools the session was shown last (a
	// list, a notification; seen once it was): a catalog change tells
	// it only when its own tools differ.
	told digest
	seen bool
	// ended ends the waits for a person when the session ends (end,
	// untilEnded); nil until either needs it.
	ended context.Context
	stop  context.CancelCauseFunc
}

func (ss *session) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if !ss.opened.Load() { // a load, not a store, on every request after the first
			ss.opened.Store(true)
			if !ss.stateless {
				ss.remember(ctx)
			}
		}
		switch method {
		case "tools/list", "tools/call":
		case "server/discover":
			res, err := next(ctx, method, req)
			return discovered(res), err
		case "subscriptions/listen":
			return ss.listen(ctx, next, method, req)
		default:
			return next(ctx, method, req)
		}
		set, err := ss.svc.current(ctx)
		if err != nil {
			ss.svc.log.ErrorContext(ctx, "MCP catalog unavailable", "method", method, "err", err)
			return nil, errCatalog
		}
		switch r := req.(type) {
		case *sdk.ListToolsRequest:
			cursor := ""
			if r.Params != nil {
				cursor = r.Params.Cursor
			}
			return ss.listFor(ctx, set, cursor)
		case *sdk.CallToolRequest:
			if r.Params == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs params"}
			}
			growStack(0, 1) // the SDK's goroutine for this request, new
			return ss.callTool(ctx, set, r, r.Session)
		}
		return next(ctx, method, req)
	}
}

// callTool answers r, a tools/call of client: on the SDK's server, and
// as the engine's own answer to a request of the stateless era
// (direct.go).
func (ss *session) callTool(ctx context.Context, set *toolSet, r *sdk.CallToolRequest, client peer) (sdk.Result, error) {
	ctx, span := ss.svc.startCall(ctx, r)
	defer span.End()
	if r.Session != nil { // the engine's own stateless answer has no stream to notify on
		ctx = listen(ctx, r)
	}
	var in *retry
	if r.Params.RequestState != "" {
		in = &retry{state: r.Params.RequestState, responses: r.Params.InputResponses}
	}
	res, err := ss.call(ctx, set, r.Params.Name, r.Params.Arguments, client, in)
	if c, ok := res.(*sdk.CallToolResult); ok && speaksStateless(client) {
		return completed{c}, err
	}
	return res, err
}

// usable is the set of names of set's tools the session's user may use,
// nil when no access rule applies: every tool. The user's strings are
// read once (cached by the rule), not per tool.
func (ss *session) usable(ctx context.Context, set *toolSet) (map[string]bool, error) {
	if ss.svc.opts.Access == nil {
		return nil, nil
	}
	ps := make([]*plugins.Plugin, 0, len(set.byName))
	for _, e := range set.byName {
		ps = append(ps, e.plugin)
	}
	ps, err := ss.svc.opts.Access.Usable(ctx, ss.subject(), ps)
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(ps))
	for _, p := range ps {
		names[p.Name] = true
	}
	return names, nil
}

// subject is whom the session's lists are for: its user, within the
// service's agent.
func (ss *session) subject() access.Subject {
	return access.Subject{User: ss.user, Narrow: ss.narrow, Agent: ss.svc.opts.Agent}
}

// list answers tools/list: every tool the user may use (usable, nil for
// all), or when searching the meta-tools (search_tools the view's), the
// pinned tools and this session's finds still in the catalog, of those.
func (ss *session) list(set *toolSet, v *view, cursor string, usable map[string]bool) (*sdk.ListToolsResult, error) {
	shown := func(name string) bool { return usable == nil || usable[name] }
	if !set.search {
		all := set.all
		if usable != nil {
			all = make([]*sdk.Tool, 0, len(usable))
			for _, t := range set.all {
				if usable[t.Name] {
					all = append(all, t)
				}
			}
		}
		from := 0
		if cursor != "" {
			n, err := strconv.Atoi(cursor)
			if err != nil || n < 0 || n > len(all) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid cursor %q", cursor)}
			}
			from = n
		}
		to := min(from+pageSize, len(all))
		res := &sdk.ListToolsResult{Tools: append([]*sdk.Tool{}, all[from:to]...), Cacheable: listCache}
		if to < len(all) {
			res.NextCursor = strconv.Itoa(to)
		}
		return res, nil
	}
	tools := []*sdk.Tool{v.searchTool, callTool}
	for _, t := range set.pinned {
		if shown(t.Name) {
			tools = append(tools, t)
		}
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.found != nil {
		for _, name := range ss.found.Names() {
			if e := set.byName[name]; e != nil && !pinned(set, name) && shown(name) {
				tools = append(tools, e.tool)
			}
		}
	}
	return &sdk.ListToolsResult{Tools: tools, Cacheable: listCache}, nil
}

// listCache is the caching a tools/list answer allows (2026-07-28): the
// user's own client only, since the tools differ per user (access, a
// session's finds), for a minute; a change is announced on
// subscriptions/listen (and to a session, notifications/tools/list_changed).
var listCache = sdk.Cacheable{TTLMs: 60_000, CacheScope: "private"}

func pinned(set *toolSet, name string) bool {
	for _, t := range set.pinned {
		if t.Name == name {
			return true
		}
	}
	return false
}

// call answers tools/call: a meta-tool, or any catalog tool by name.
func (ss *session) call(ctx context.Context, set *toolSet, name string, args json.RawMessage, client peer, in *retry) (sdk.Result, error) {
	if set.search {
		switch name {
		case plugins.SearchToolsName:
			v, err := ss.view(ctx, set)
			if err != nil {
				ss.svc.log.ErrorContext(ctx, "MCP tool search refused: the user's permissions are unreadable", "err", err)
				return errorResult("the tools you may use cannot be read at the moment; nothing was searched"), nil
			}
			return ss.search(set, v, args, ss.usableFilter(ctx)), nil
		case plugins.CallToolName:
			a, err := toolset.ParseCallArgs(args)
			if err != nil {
				return errorResult(err.Error()), nil
			}
			e := ss.entry(ctx, set, a.Name)
			if e == nil {
				return errorResult(fmt.Sprintf("there is no tool named %q; call %s to find the tool for the task", a.Name, plugins.SearchToolsName)), nil
			}
			return ss.execute(ctx, e, a.Arguments, client, in)
		}
	}
	e := ss.entry(ctx, set, name)
	if e == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	return ss.execute(ctx, e, args, client, in)
}

// entry is the tool a call names: set's, or for an agent's service an
// enabled catalog tool outside the agent (Options.Row), which the
// executor refuses and records; nil when the catalog has none.
func (ss *session) entry(ctx context.Context, set *toolSet, name string) *entry {
	if e := set.byName[name]; e != nil {
		return e
	}
	if ss.svc.opts.Agent == "" || ss.svc.opts.Row == nil {
		return nil
	}
	p, err := ss.svc.opts.Row(ctx, name)
	if err != nil {
		ss.svc.log.WarnContext(ctx, "MCP call of a tool outside the agent: the catalog could not be read", "tool", name, "err", err)
		return nil
	}
	if p == nil || !p.Enabled() {
		return nil
	}
	return &entry{plugin: p}
}

// elicitation is what a client declared: form mode (an empty
// elicitation capability means form, as before 2025-11-25) and URL mode.
func elicitation(s peer) (form, url bool) {
	if s == nil {
		return false, false
	}
	p := s.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false, false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil, e.URL != nil
}

// elicitTimeout bounds how long a call waits for the person a form
// elicitation asks.
const elicitTimeout = 5 * time.Minute

// ask asks the person through the client whether to send the waiting
// call: form elicitation, the prepared request in the message. It
// reports the answer; ok false when the client could not be asked;
// ended when the session ended meanwhile.
func (ss *session) ask(ctx context.Context, client peer, w *Waiting) (approve, ok bool, ended *SessionEndedError) {
	ctx, cancel := ss.untilEnded(ctx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, elicitTimeout)
	defer cancelTimeout()
	res, err := client.Elicit(ctx, &sdk.ElicitParams{Mode: "form", Message: w.Message,
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}})
	if ended := endedBy(ctx); ended != nil {
		return false, false, ended
	}
	if err != nil {
		ss.svc.log.WarnContext(ctx, "MCP elicitation failed; the call waits for an approval elsewhere", "err", err)
		return false, false, nil
	}
	return res.Action == "accept", res.Action != "cancel", nil
}

// execute runs a catalog tool blind for the session's user; a found tool
// it calls becomes the most recently used. in is a retry's requestState
// and answers (multi round-trip requests), nil for a first call.
func (ss *session) execute(ctx context.Context, e *entry, args json.RawMessage, client peer, in *retry) (sdk.Result, error) {
	ss.mu.Lock()
	if ss.found != nil && ss.found.Has(e.plugin.Name) {
		ss.found.Use(e.plugin.Name)
	}
	ss.mu.Unlock()
	call := engine.Call{Plugin: e.plugin, Arguments: args, UserID: ss.user, Narrow: ss.narrow, Agent: ss.svc.opts.Agent}
	if ss.token != 0 {
		// Named, not copied: its perms are read as they are at the
		// decision, and at an answer to an upstream's question.
		call.Token, call.Narrow = ss.token, nil
	}
	g := ss.svc.opts.Gate
	if g != nil {
		call.Policy = g.Policy()
	}
	plan, err := ss.svc.ex.Decide(ctx, call)
	if plan == nil {
		return result(nil, err), nil
	}
	var st *requestState
	if in != nil && ss.modern(client) {
		if st, err = ss.claim(ctx, e, args, in); err != nil {
			return nil, stateError(err)
		}
		if st.Mode == modeUpstream { // the answer to an upstream's question
			return ss.resume(ctx, e, args, st, in)
		}
	}
	if plan.Verdict() == engine.VerdictPerson { // only under a Gate's policy
		// Through a pointer to a copy: one to call would move it to the
		// heap on every call, this path's or not.
		held := call
		if answer, err, send := ss.person(ctx, e, &held, plan, client, st, in); !send {
			return answer, err
		}
	}
	if ss.asks(e, client) {
		return ss.sendParked(ctx, e, args, plan, client, st)
	}
	if e.plugin.Execution.Type == plugins.TypeMCP { // the only kind an upstream can ask during
		ctx = ss.asking(ctx, client)
	}
	res, err := ss.svc.ex.Send(ctx, plan)
	if out, cerr, ok := ss.connect(ctx, e, args, res, client, st); ok {
		return out, cerr
	}
	return result(res, err), nil
}

// notConfirmed answers a call the person declined.
func notConfirmed() *sdk.CallToolResult {
	return errorResult(`{"error":{"code":"not_confirmed","message":"the user declined this call; nothing was sent"}}`)
}

// person renders a plan that waits for a person: send when a person
// approved exactly its request (the plan approved), else the answer. A
// retry's state st (claimed) carries what the person answered the form
// with; a client of 2026-07-28 is asked by input_required, an older one
// by elicitation on its session, or by URL.
func (ss *session) person(ctx context.Context, e *entry, call *engine.Call, plan *engine.Plan, client peer, st *requestState, in *retry) (_ sdk.Result, _ error, send bool) {
	g := ss.svc.opts.Gate
	if st != nil && (st.Mode == modeForm || st.Mode == modeURL) {
		if st.Request != plan.Person.Digest {
			return nil, stateError(errors.New("requestState: the request prepared now differs from the one the person was shown (its plugin, server, arguments or credentials changed); nothing was sent")), false
		}
		if st.Mode == modeForm {
			approve, answered := approved(in.responses)
			switch {
			case !answered:
				// The decision is missing: asked again, as the MRTR
				// page has it, with a new state.
				st = nil
			case g.Decide(ctx, call, plan, st.Pending, approve):
				return nil, nil, true
			case !approve:
				return notConfirmed(), nil, false
			}
		}
		// Approved elsewhere (the console, the approval page): Hold
		// claims that approval.
	}
	w := g.Hold(ctx, call, plan)
	if w == nil {
		return nil, nil, true
	}
	if ss.modern(client) {
		// A retry still waiting (the person has not approved at the URL
		// yet) is told so rather than asked again: the client's own loop
		// would ask the person again at once.
		if w.ID != "" && st == nil {
			res, ok, err := ss.askAgain(e, call.Arguments, plan, w, client)
			if err != nil {
				ss.svc.log.ErrorContext(ctx, "MCP input_required not answered", "err", err)
			} else if ok {
				return res, nil, false
			}
		}
		return errorResult(w.Text), nil, false
	}
	form, urlMode := elicitation(client)
	approve, asked := false, false
	if w.Elicit && form && client != nil && (ss.direct || ss.svc.holdsStream(client.ID())) {
		var ended *SessionEndedError
		if approve, asked, ended = ss.ask(ctx, client, w); ended != nil {
			// Recorded with its session's end, past the call's context
			// (which the end cancelled).
			g.Close(context.WithoutCancel(ctx), w.ID, ended.Error())
			return errorResult(ended.Error()), nil, false
		}
	}
	switch {
	case asked && !g.Decide(ctx, call, plan, w.ID, approve):
		return notConfirmed(), nil, false
	case asked:
		return nil, nil, true
	case urlMode && w.URL != "":
		// Answered at once: the person approves at the URL, and
		// the client calls again.
		return nil, sdk.URLElicitationRequiredError([]*sdk.ElicitParams{{Mode: "url", Message: w.Message, URL: w.URL, ElicitationID: w.ID}}), false
	default:
		return errorResult(w.Text), nil, false
	}
}

// searchAnswer is the content of a search_tools result.
type searchAnswer struct {
	Tools []toolset.Match `json:"tools"`
	Note  string          `json:"note"`
}

// search answers search_tools: the matches, of which those not pinned
// join this session's tools (the least recently used dropped beyond the
// capacity); when that changes the list, the client is notified.
func (ss *session) search(set *toolSet, v *view, args json.RawMessage, usable *toolsearch.Filter) *sdk.CallToolResult {
	a, err := toolset.ParseSearchArgs(args, ss.svc.opts.Search.MaxQueryChars)
	if err != nil {
		return errorResult(err.Error())
	}
	rs, err := toolset.Within(set.index, a.Query, a.Limit, usable)
	if err != nil {
		return errorResult(err.Error())
	}
	ans := searchAnswer{Tools: []toolset.Match{}}
	var load []string
	for _, r := range rs {
		e := set.byName[r.Name]
		if e == nil {
			continue
		}
		if len(ans.Tools) == a.Limit {
			break
		}
		ans.Tools = append(ans.Tools, toolset.Describe(e.plugin, nil))
		if !pinned(set, r.Name) {
			load = append(load, r.Name)
		}
	}
	ss.mu.Lock()
	if ss.found == nil {
		ss.found = toolset.NewWorking(set.capacity)
	}
	loaded, dropped := ss.found.Use(load...)
	ss.mu.Unlock()
	ss.svc.log.Debug("MCP tool search", "query", a.Query, "found", len(ans.Tools), "loaded", len(loaded), "dropped", len(dropped))

	// The registry mirrors the finds: changing it makes the SDK send
	// notifications/tools/list_changed to this session.
	ss.server.RemoveTools(dropped...)
	for _, name := range loaded {
		e := set.byName[name]
		ss.server.AddTool(e.tool, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, errCatalog // never called: the middleware answers tools/call
		})
	}

	switch {
	case len(ans.Tools) == 0:
		ans.Note = toolset.NoMatchNote(v.langs)
	case ss.stateless:
		// Nothing is remembered for the next request's tools/list.
		ans.Note = "Call one of these tools by name, or through call_tool."
	default:
		ans.Note = "These tools are in your tool list now (the server sent notifications/tools/list_changed): call one by name, or through call_tool."
	}
	b, err := json.Marshal(ans)
	if err != nil { // strings and string slices always marshal
		panic(err)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// usableFilter narrows a search to the tools the session's user may use
// (nil when no access rule applies): asked once per search, with its
// matches only.
func (ss *session) usableFilter(ctx context.Context) *toolsearch.Filter {
	if ss.svc.opts.Access == nil {
		return nil
	}
	sub := ss.subject()
	return &toolsearch.Filter{
		Keep: func(ps []*plugins.Plugin) ([]*plugins.Plugin, error) { return ss.svc.opts.Access.Usable(ctx, sub, ps) },
		Set: func(all []*plugins.Plugin) (toolsearch.Set, error) {
			return ss.svc.opts.Access.UsableSet(ctx, sub, all)
		},
	}
}

func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

// callStack is about the stack a tools/call's goroutine reaches (the
// schema's validation, the HTTP client, the record): the SDK starts a
// goroutine per request at the runtime's smallest stack, and it used to
// double it five times on the way down, each time copying every frame
// already on it: 6–9% of `mcp serve --stdio`'s CPU (issue 38).
const callStack = 48 << 10

// growStack grows the calling goroutine's stack at once, while few frames
// are on it, by taking a frame of callStack bytes; indexing it with
// arguments it cannot see keeps the frame from being optimized away. Only
// a goroutine new for the call takes it: the frame is zeroed each time
// (5 µs), and an HTTP connection's goroutine, which serves the engine's
// own answers over /mcp one request after another, keeps the stack its
// first call grew (issue 47).
//
//go:noinline
func growStack(i, j int) byte {
	var frame [callStack]byte
	frame[i] = 1
	return frame[j]
}
