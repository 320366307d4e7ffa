package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultListenPoll is how often a subscriptions/listen stream looks for
// a change of the catalog: the catalog itself learns of a change made on
// another replica at its own poll of the change counter.
const DefaultListenPoll = time.Second

// listen serves subscriptions/listen (2026-07-28): the SDK holds the
// stream open and sends what the server's registry announces, while the
// catalog is watched meanwhile, each change of the tools the subject may
// list announced as notifications/tools/list_changed. A grant changed
// moves no catalog version: Service.Changed tells the stream of it.
//
// An HTTP session's client (of a version before 2026-07-28) hears of
// changes on its GET stream, and is refused the request: each held a
// goroutine watching the catalog as long as the client liked, and
// nothing bounded how many a session held (the bound on requests in
// flight is the stateless era's).
func (ss *session) listen(ctx context.Context, next sdk.MethodHandler, method string, req sdk.Request) (sdk.Result, error) {
	if !ss.stateless && !ss.direct {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: method + " is a request of MCP 2026-07-28, served without a session: this session hears of changes on its GET stream"}
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// End finds the stream here: a stateless request's session is in no
	// other registry.
	l := &listener{ss: ss, stop: stop}
	ss.svc.listeners.Store(l, struct{}{})
	defer ss.svc.listeners.Delete(l)
	// A request that finds a bound reached ends it to take its place.
	if ss.slot != nil {
		ss.svc.inflight.listening(ss.slot, stop)
	}
	// Shutdown ends the stream, as it ends a session's GET stream: it
	// would otherwise hold http.Server.Shutdown until its deadline.
	defer context.AfterFunc(ss.svc.closing, stop)()
	go ss.watch(ctx)
	return next(ctx, method, req)
}

// watch announces each change of the catalog's version that changed the
// tools the stream's subject may list, until ctx ends.
func (ss *session) watch(ctx context.Context) {
	poll := ss.svc.opts.ListenPoll
	if poll <= 0 {
		poll = DefaultListenPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	seen := int64(-1)
	if set, err := ss.svc.current(ctx); err == nil {
		seen = set.version
		ss.changed(ctx, set) // what the stream's client knows
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		set, err := ss.svc.current(ctx)
		if err != nil || set.version == seen {
			continue
		}
		seen = set.version
		if !ss.changed(ctx, set) {
			continue // a change of tools its user may not list
		}
		ss.svc.log.DebugContext(ctx, "MCP catalog changed: listeners told", "version", seen)
		ss.announce()
	}
}

// listener is a subscriptions/listen stream held open, and how to end it.
type listener struct {
	ss   *session
	stop context.CancelFunc
}
