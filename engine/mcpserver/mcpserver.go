// Package mcpserver serves the plugin catalog as an MCP server: any MCP
// client can list the enabled plugins as tools and call them, executed
// blind by the engine for one user, HTTP and MCP plugins alike.
//
// A tool is what the LLM sees of a plugin and nothing more: its name,
// description and, as inputSchema, Plugin.LLMParameters (parameters
// without the fixed ones). Execution, auth config, fixed params and
// credentials never reach the client.
//
// The catalog's tool set is built once per catalog version (the change
// counter of the plugins) and shared by every session. When it holds more
// tools than the tool search threshold (engine/toolset), tools/list
// answers the meta-tools search_tools and call_tool, the pinned tools and
// the tools this session's searches found; after a search that found new
// tools the server sends notifications/tools/list_changed. Any catalog
// tool may be called by name, listed or not.
//
// A call's result is the engine's output as text content, plus
// structuredContent when the output is a JSON object; a call that is not
// ok (refused, failed upstream, a tool error) has isError set and the
// engine's error object as its text.
package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
)

// EnvUser names the setting of the user `blindexec mcp serve --stdio`
// acts for (a RuoYi user id).
const EnvUser = "BLINDEXEC_MCP_USER"

// Catalog is where the server finds plugins: *catalog.Catalog.
type Catalog interface {
	// EnabledPlugins lists the enabled plugins, bringing the catalog up
	// to date.
	EnabledPlugins(ctx context.Context) ([]*plugins.Plugin, error)
	// Version moves whenever the catalog changes: the shared tool set is
	// rebuilt when it does.
	Version() int64
}

// Executor decides calls and sends what it decided: *engine.Executor.
type Executor interface {
	Decide(ctx context.Context, call engine.Call) (*engine.Plan, error)
	Send(ctx context.Context, plan *engine.Plan) (*engine.Result, error)
}

// Options configure a Service.
type Options struct {
	// Search is the tool search setting (BLINDEXEC_TOOL_SEARCH*): the
	// mode, the threshold and the pinned tools.
	Search toolset.Config
	// NewIndex builds the search index over the catalog (nil:
	// toolsearch.New).
	NewIndex func([]*plugins.Plugin) (toolset.Searcher, error)
	Logger   *slog.Logger // nil: slog.Default()
	// Sessions bound the HTTP sessions of Handler.
	Sessions SessionLimits
	// Tracer, when set, starts a server span for each tools/call, child
	// of the traceparent header of its HTTP request, which the API has
	// rewritten with its own span; nil: tracing off.
	Tracer trace.Tracer
	// Gate holds the calls that wait for a person (issue 33); nil: none
	// waits.
	Gate Gate
	// Connector gives a start URL when a call needs an account the
	// user has not connected (issue 34); nil: the client reads
	// connection_required without one.
	Connector Connector
	// Access leaves the tools a session's user may not use out of
	// tools/list and search_tools (issue 46; the executor refuses their
	// calls); nil lists every tool.
	Access Access
	// Row, for a service of an agent's tools (Agent set), finds the
	// catalog plugin called name (nil, nil: none): a call of an enabled catalog tool
	// outside the agent then goes to the executor, which refuses it
	// (permission_denied naming the plugin and the agent) and records
	// the refusal, as /mcp refuses and records a tool its user may not
	// use. nil: such a call is an unknown tool, as a name of no catalog
	// tool always is.
	Row func(ctx context.Context, name string) (*plugins.Plugin, error)
	// RoundTrips, when set, lets a call of a 2026-07-28 client that
	// waits for a person or a connection answer input_required with a
	// sealed requestState (issue 47); nil: such a client reads the tool
	// error that names the pending item, as a client without elicitation.
	RoundTrips *RoundTrips
	// Inbox, when set, keeps an upstream's questions during a call as
	// pending items: a client that cannot be asked in its own channel
	// has them put to the person on the approval page, and one of
	// 2026-07-28 is asked by input_required, answerable from any replica
	// (parked.go). nil: such a question is refused at once.
	Inbox Inbox
	// ListenPoll is how often a subscriptions/listen stream looks for a
	// catalog change (DefaultListenPoll when 0).
	ListenPoll time.Duration
	// Agent names the agent whose tools the service serves (the catalog
	// given is then the agent's view, catalog.Agents.View): its sessions'
	// lists and searches are within it, and every call names it to the
	// executor, which refuses a tool outside it (engine.Call.Agent).
	Agent string
}

// Access narrows a list of tools to those a user may use
// (*access.Checker).
type Access interface {
	Usable(ctx context.Context, sub access.Subject, ps []*plugins.Plugin) ([]*plugins.Plugin, error)
	// UsableSet is Usable over an index's list, as the set of
	// positions, kept per subject (a search asks it).
	UsableSet(ctx context.Context, sub access.Subject, all []*plugins.Plugin) (*access.Set, error)
	// Read tells which read of user's permission strings a list is
	// decided on now (another once it expired): a view is kept against
	// it. ok false: nothing decided for user may be kept.
	Read(ctx context.Context, user int64) (read uint64, ok bool)
}

// Gate keeps the calls that wait for a person (issue 33). Whether a call
// waits is the executor's decision, under the Gate's policy; the Gate
// only keeps what waits and what a person decided. Nothing a client
// sends decides it.
type Gate interface {
	// Policy is the confirmation policy clients' calls are decided under.
	Policy() confirm.Policy
	// Hold is given call, which plan holds for a person: nil when a
	// person approved exactly this request (plan approved, Plan.Approve),
	// else what the client is told.
	Hold(ctx context.Context, call *engine.Call, plan *engine.Plan) *Waiting
	// Decide records the answer a person gave through elicitation to
	// the waiting call id, and approves plan when approved; false
	// otherwise.
	Decide(ctx context.Context, call *engine.Call, plan *engine.Plan, id string, approve bool) bool
	// Close closes the waiting call id undecided: the session asking
	// the person ended (why); nothing was sent.
	Close(ctx context.Context, id, why string)
}

// Waiting is a call waiting for a person: the tool error's text (what to
// approve, and that nothing was sent), and where a person approves it. A
// client that declared URL elicitation gets the specification's
// URL-elicitation-required error pointing there instead.
type Waiting struct {
	Text    string
	ID      string // the pending item
	Message string // one sentence for the person
	URL     string // the approval page; "" when none is served
	// Elicit allows asking the person through the client (form
	// elicitation) when it holds a stream to ask on; false when
	// approvals must come from the console.
	Elicit bool
}

// Service serves one catalog to any number of sessions, each its own
// *sdk.Server acting for one user.
type Service struct {
	cat  Catalog
	ex   Executor
	opts Options
	log  *slog.Logger

	mu  sync.Mutex // serializes builds
	set *toolSet   // the last built

	sessions *registry // of Handler

	// closing ends the sessions' notification streams (Close).
	closing context.Context
	// parkedCalls are the calls running on for clients of 2026-07-28
	// (parked.go): Close waits for them to end.
	parkedCalls sync.WaitGroup
	close       context.CancelFunc

	// httpSessions holds Handler's sessions.
	httpSessions sync.Map // session id → *httpSession

	// inflight bounds the stateless requests in flight per user and in all.
	inflight *inflight
	// clients holds the clients requests of the stateless era declared.
	clients clients
	// stateless is the SDK's handler of the stateless era, made once.
	stateless     http.Handler
	statelessOnce sync.Once
	// live are the sessions Changed notifies, dropped once their server
	// has no session left: by Changed, and every pruneEvery sessions
	// opened (a catalog that never changes never calls Changed).
	live   sync.Map // *session → struct{}
	opened atomic.Int64
	// listeners are the subscriptions/listen streams open (End).
	listeners sync.Map // *listener → struct{}
	// toTell is a change not yet compared; telling, that Changed's
	// goroutine runs.
	toTell, telling atomic.Bool
}

// pruneEvery is how many sessions open between two sweeps of the ended
// ones out of Service.live.
const pruneEvery = 256

// NewService returns the service of cat's enabled plugins, executed by ex.
func NewService(cat Catalog, ex Executor, opts Options) *Service {
	if opts.NewIndex == nil {
		opts.NewIndex = func(ps []*plugins.Plugin) (toolset.Searcher, error) { return toolsearch.New(ps) }
	}
	closing, close := context.WithCancel(context.Background())
	reg := newRegistry(opts.Sessions)
	log := cmp.Or(opts.Logger, slog.Default())
	return &Service{cat: cat, ex: ex, opts: opts, log: log, closing: closing, close: close, sessions: reg,
		inflight: &inflight{max: opts.Sessions.perUser(), total: opts.Sessions.total(), reg: reg, log: log, now: time.Now,
			n: map[int64]int{}, logged: map[int64]time.Time{}}}
}

// Close ends the HTTP sessions' long-lived GET streams, which would
// otherwise hold http.Server.Shutdown until its deadline: register it with
// RegisterOnShutdown. Requests in flight finish; clients reconnect
// elsewhere. Calls parked for an answer are ended (their questions
// answered cancel, a retry told the call ended), and waited for.
func (s *Service) Close() {
	s.close()
	s.parkedCalls.Wait()
}

// errCatalog is what a client reads when the catalog cannot be read.
var errCatalog = errors.New("the catalog is unavailable; see the engine's log")

// current is the shared tool set of the catalog's version, built when the
// version moved since the last build.
func (s *Service) current(ctx context.Context) (*toolSet, error) {
	// The version is read first, so the plugins are at least as new as
	// it: a set tagged older than its plugins is only rebuilt once more.
	v := s.cat.Version()
	ps, err := s.cat.EnabledPlugins(ctx)
	if err != nil {
		return nil, err
	}
	// EnabledPlugins reloads a catalog whose counter moved since its last
	// read, and Version is of the plugins it holds: read before that
	// reload, v was the held set's, and the set of the version before was
	// answered (the first request after a change, before the reload the
	// poll starts in the background). Read again at the version reloaded.
	if now := s.cat.Version(); now != v {
		v = now
		if ps, err = s.cat.EnabledPlugins(ctx); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set != nil && s.set.version == v {
		return s.set, nil
	}
	set, err := s.build(v, ps)
	if err != nil {
		return nil, err
	}
	s.set = set
	return set, nil
}

// NewServer returns the server of one session acting for userID.
func (s *Service) NewServer(userID int64) *sdk.Server {
	return s.serverFor(sessionOptions{user: userID, endpoint: endpointStdio})
}

// sessionOptions are what a server is made for: the user it acts for and
// the identity, the endpoint, and how it reaches the client.
type sessionOptions struct {
	user      int64
	narrow    []access.Held // the token's fixed permission strings
	principal string        // the token's hash ("" for stdio)
	token     int64         // the token's id (Identity.Token)
	// endpoint is the path the client reached (/mcp, an agent's), or
	// endpointStdio: a requestState is good for its endpoint only.
	endpoint string
	// direct marks a connection that carries the server's requests to
	// the client itself (stdio), where an HTTP session needs its GET
	// stream for them.
	direct bool
	// stateless marks a server made for one request of the stateless
	// era: it remembers nothing from one request to the next.
	stateless bool
	// slot is that request's place in flight (inflight).
	slot *slot
}

// endpointStdio is the endpoint of `mcp serve --stdio`.
const endpointStdio = "stdio"

// serverFor returns a server acting as o says.
func (s *Service) serverFor(o sessionOptions) *sdk.Server {
	return s.newSession(o).server
}

// newSession returns the session of a server acting as o says.
func (s *Service) newSession(o sessionOptions) *session {
	srv := sdk.NewServer(serverInfo, &sdk.ServerOptions{
		Logger:       s.log,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
	})
	ss := &session{svc: s, server: srv, sessionOptions: o}
	srv.AddReceivingMiddleware(ss.middleware)
	if !o.stateless { // a stateless client learns of changes on subscriptions/listen
		s.live.Store(ss, struct{}{})
		if s.opened.Add(1)%pruneEvery == 0 {
			s.sweep(nil)
		}
	}
	return ss
}

// sweep drops the ended sessions out of live and hands each open one to
// open (nil: none).
func (s *Service) sweep(open func(*session)) {
	s.live.Range(func(k, _ any) bool {
		ss := k.(*session)
		n := 0
		for range ss.server.Sessions() {
			n++
		}
		switch {
		case n > 0 && open != nil:
			open(ss)
		case n == 0 && ss.opened.Load():
			s.live.Delete(ss) // ended
		}
		return true
	})
}

// changedTool is the tool announce adds and removes at once: the SDK
// sends notifications/tools/list_changed on a change of its server's
// registry and offers no other way to send it. The session answers
// tools/list itself, so the registry's contents are never listed.
var changedTool = &sdk.Tool{Name: "_blindexec_changed", InputSchema: map[string]any{"type": "object"}}

// Changed tells every open session whose tools changed
// (notifications/tools/list_changed): the catalog or the agent the
// service serves moved. A session's tools are those its view may list
// (view.go), compared once per view: a change of a tool hidden from its
// user tells it nothing. A client lists its tools again; what it gets is
// decided then. It returns at once: the comparison reads the catalog and
// the access rule, which the caller (the change watcher's poll, whose other
// handlers end revoked tokens' streams) must not wait on; changes that
// come meanwhile are compared once, after.
func (s *Service) Changed() {
	s.toTell.Store(true)
	if !s.telling.CompareAndSwap(false, true) {
		return // the one telling sees toTell
	}
	go func() {
		for {
			for s.toTell.Swap(false) {
				s.tell()
			}
			s.telling.Store(false)
			if !s.toTell.Load() || !s.telling.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// tell tells the open sessions whose tools changed (Changed).
func (s *Service) tell() {
	if s.closing.Err() != nil {
		return // closed: its sessions are ending
	}
	ctx, cancel := context.WithTimeout(s.closing, changedTimeout)
	defer cancel()
	// The catalog brought up to date first: its version is what the
	// tool set is built for.
	_, err := s.cat.EnabledPlugins(ctx)
	var set *toolSet
	if err == nil {
		set, err = s.current(ctx)
	}
	if err != nil {
		s.log.WarnContext(ctx, "MCP catalog changed but unreadable: every session is told", "err", err)
	}
	tell := func(ss *session) {
		if set == nil || ss.changed(ctx, set) {
			ss.announce()
		}
	}
	s.sweep(tell)
	// A subscriptions/listen stream (2026-07-28) too: its own watch
	// follows the catalog's version only, which a grant changed does not
	// move. A stream already told above compares as unchanged.
	s.listeners.Range(func(k, _ any) bool {
		tell(k.(*listener).ss)
		return true
	})
}

// announce makes the SDK send notifications/tools/list_changed to the
// session's client (its stream, or its subscriptions/listen).
func (ss *session) announce() {
	ss.server.AddTool(changedTool, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return errorResult("not a tool"), nil
	})
	ss.server.RemoveTools(changedTool.Name)
}

// changedTimeout bounds Changed's reading of the catalog and the users'
// permissions (each read once, not per session).
const changedTimeout = 10 * time.Second

// End ends every session whose identity gone reports: its requests
// would be refused already (a revoked token), but a stream it holds open
// — a session's GET stream, a subscriptions/listen stream — would go on
// telling it of catalog changes and its calls' progress. Its calls
// waiting for a person end at once, with errTokenChanged (httpSession.end).
func (s *Service) End(gone func(Identity) bool) {
	s.httpSessions.Range(func(_, v any) bool {
		if hs := v.(*httpSession); hs.ss != nil && gone(hs.ident) {
			hs.end(errTokenChanged)
		}
		return true
	})
	s.listeners.Range(func(k, _ any) bool {
		if l := k.(*listener); gone(l.ss.identity()) {
			l.stop()
		}
		return true
	})
}

// identity is whom the session acts for, as the request that made it
// was authenticated.
func (ss *session) identity() Identity {
	return Identity{User: ss.user, Principal: ss.principal, Narrow: ss.narrow, Token: ss.token}
}

// ServeStdio serves the catalog over stdin/stdout for userID until ctx ends
// or the client disconnects (`blindexec mcp serve --stdio`, the user from
// BLINDEXEC_MCP_USER).
func (s *Service) ServeStdio(ctx context.Context, userID int64) error {
	in := polled(os.Stdin, os.Stdout, os.Stderr)
	defer in.Close() // and blocking again, as the client handed it over
	return s.serveLines(ctx, userID, in, os.Stdout)
}

// serveLines serves one session over newline-delimited JSON-RPC.
func (s *Service) serveLines(ctx context.Context, userID int64, r io.ReadCloser, w io.Writer) error {
	ss := s.newSession(sessionOptions{user: userID, endpoint: endpointStdio, direct: true})
	calls := &lineCalls{ctx: ctx, ss: ss, callers: newCallers(), inFlight: map[jsonrpc.ID]context.CancelFunc{}}
	defer close(calls.callers.stop)
	return ss.server.Run(ctx, &lineTransport{r: r, w: w, take: calls.take})
}

// result turns the engine's answer into an MCP result.
func result(res *engine.Result, err error) *sdk.CallToolResult {
	if _, refused := errors.AsType[*engine.RefusedError](err); err != nil && !refused {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the call failed: " + err.Error()}}}
	}
	if len(res.Relayed) > 0 {
		// An upstream MCP tool's result, masked by the executor: every
		// content block and the structured content as the tool gave them,
		// its isError included (issue 48 point 1).
		var whole sdk.CallToolResult
		if json.Unmarshal(res.Relayed, &whole) == nil {
			return &whole
		}
	}
	if !res.OK {
		b, _ := json.Marshal(map[string]any{"error": res.Error, "http_status": res.HTTPStatus, "execution_id": res.ExecutionID})
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
	}
	r := &textResult{text: sdk.TextContent{Text: res.Text()}}
	r.content[0] = &r.text
	r.CallToolResult.Content = r.content[:]
	if len(res.Output) > 0 && res.Output[0] == '{' {
		r.structured = res.Output
		r.StructuredContent = &r.structured
	}
	return &r.CallToolResult
}

// textResult is a result of one text block in one allocation, where the
// result, its content slice and its block were three on every call's path;
// its structured content is held by pointer, since a json.RawMessage put
// in an interface is a fourth.
type textResult struct {
	sdk.CallToolResult
	content    [1]sdk.Content
	text       sdk.TextContent
	structured json.RawMessage
}
