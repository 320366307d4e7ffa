package mcpserver

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/internal/header"
	"github.com/blindexec/blindexec/internal/httpbody"
)

// MCP 2026-07-28 (SEP-2575): no session and no initialize; each request
// carries its protocol version and the client's capabilities in _meta,
// and any replica may answer it. Handler serves such a request on the
// go-sdk's stateless streamable handler, with a server made for that one
// request and the identity that authenticated it; everything the
// stateful path enforces (the token, the user's tools, the executor's
// decision, quotas, records, tracing, the body limit, the Host check) is
// the same code on both. What a session bounded per user (its number)
// is bounded here by the user's requests in flight.

// firstStateless is the first protocol version served without sessions.
const firstStateless = "2026-07-28"

// versions are every protocol version an endpoint serves: the stateful
// ones in sessions, the rest statelessly. server/discover names them all.
var versions = sdk.SupportedProtocolVersions()

// metaVersion is the gjson path of a request's protocol version in its
// _meta (the dots of the key escaped).
const metaVersion = `params._meta.io\.modelcontextprotocol/protocolVersion`

// serverKey carries the server made for one stateless request to the
// SDK's handler, which asks for it twice.
type serverKey struct{}

// statelessHandler is the SDK's handler in stateless mode, answering JSON
// (a subscriptions/listen streams its events regardless).
func (s *Service) statelessHandler() http.Handler {
	s.statelessOnce.Do(func() {
		s.stateless = sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
			srv, _ := r.Context().Value(serverKey{}).(*sdk.Server)
			return srv
		}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.log,
			MaxRequestBodyBytes: httpbody.MaxJSON, PropagateRequestCancellation: true})
	})
	return s.stateless
}

// statelessRequest reports whether r is a request of the stateless era by
// its Mcp-Protocol-Version header.
func statelessRequest(r *http.Request) bool {
	return header.Get(r.Header, headerProtocol) >= firstStateless
}

// serveStateless serves one request of the stateless era for id: within
// the user's bound on requests in flight, on a server made for it.
func (s *Service) serveStateless(w http.ResponseWriter, r *http.Request, id Identity) {
	v := header.Get(r.Header, headerProtocol)
	if v != "" && !slices.Contains(versions, v) {
		unsupported(w, jsonrpc.ID{}, v)
		return
	}
	if err := s.inflight.take(r.Context(), id.User); err != nil {
		s.log.WarnContext(r.Context(), "MCP request refused", "user", id.User, "err", err)
		w.Header().Set("Retry-After", "1")
		writeJSONError(w, http.StatusTooManyRequests, errorResponse(jsonrpc.ID{}, codeSessionLimit, err.Error(), map[string]any{"limit": err.Limit, "max": err.Max}))
		return
	}
	// The engine's own answers never listen: only the SDK's requests get a
	// slot a bound may end, so a tools/call allocates none.
	var sl *slot
	defer func() { s.inflight.done(id.User, sl) }()
	if s.direct(w, r, id) {
		return
	}
	sl = &slot{user: id.User}
	s.serveSDK(w, r, id, sl)
}

// serveSDK serves a request of the stateless era for id on the SDK's
// handler, with a server made for it; sl is its place in flight (a
// subscriptions/listen stream gives it up to make room: inflight).
func (s *Service) serveSDK(w http.ResponseWriter, r *http.Request, id Identity, sl *slot) {
	o := id.options(r.URL.Path)
	o.stateless, o.slot = true, sl
	srv := s.serverFor(o)
	s.statelessHandler().ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), serverKey{}, srv)))
}

// unsupported answers a request naming a protocol version no endpoint
// serves: UnsupportedProtocolVersion (-32022) naming those it does.
func unsupported(w http.ResponseWriter, id jsonrpc.ID, requested string) {
	writeJSONError(w, http.StatusBadRequest, errorResponse(id, sdk.CodeUnsupportedProtocolVersion,
		fmt.Sprintf("protocol version %q is not supported; this server speaks %s", requested, strings.Join(versions, ", ")),
		sdk.UnsupportedProtocolVersionData{Supported: versions, Requested: requested}))
}

// statelessBody reports whether a POSTed request without a session
// carries a protocol version of the stateless era in its _meta: it is
// served statelessly, where a missing Mcp-Protocol-Version header is
// answered with HeaderMismatch.
func statelessBody(body []byte) bool {
	return gjson.GetBytes(body, metaVersion).String() >= firstStateless
}

// InFlightLimitError refuses a stateless request: the user, or the
// replica, has the most requests in flight allowed (the session caps'
// numbers).
type InFlightLimitError struct {
	Limit string
	Max   int
	Env   string // the setting
}

func (e *InFlightLimitError) Error() string {
	return fmt.Sprintf("too many MCP requests in flight: the limit of %d %s (%s) is reached; retry when one has been answered", e.Max, e.Limit, e.Env)
}

// inflight bounds the stateless requests in flight per user, as the
// session cap bounds a user's sessions (a subscriptions/listen stream
// holds one while open), and per replica, as the sessions of the replica
// are: a token acting for any user it names (the service token) would
// otherwise hold as many as it names users.
//
// A subscriptions/listen stream holds its place as an idle session holds
// one, waiting: past a bound, a request ends the oldest listen stream it
// may end under it and takes its place, as a new session ends the
// least recently used idle one; its client listens again (leftovers80).
// Under the per-user bound that is the user's own oldest; under the
// replica's, the user's own or one that has held its place ListenTenure
// (listen81): the check runs before the request is read, so any request
// could end any stream, and a stream ended, listening again while the
// replica is full, ended the next (review81). Only requests at work and
// younger streams of others refuse a request.
type inflight struct {
	max, total int
	reg        *registry // its ended and refused counters
	log        *slog.Logger
	now        func() time.Time // a listen stream's tenure is read on it

	mu      sync.Mutex
	n       map[int64]int
	all     int
	listens list.List // of *slot: the listen streams in flight, oldest first
	// logged is when a request of a user last ended another user's
	// stream and was logged: once per ListenTenure per user.
	logged map[int64]time.Time
}

// ListenTenure is how long a subscriptions/listen stream holds its place
// before another user's request may end it: a stream that listens again
// cannot end the others, young too, in turn, and one user's loop of
// requests ends each other stream at most once per tenure, then is
// refused 429.
const ListenTenure = 30 * time.Second

// slot is one stateless request in flight.
type slot struct {
	user int64
	// stop ends the request: set while it is a listen stream, which is
	// then in inflight.listens at elem, since it began listening.
	stop  context.CancelFunc
	elem  *list.Element
	since time.Time
	// freed: its place was given to another request; done counts nothing.
	freed bool
}

// take counts a request of user in flight until done is called, ending
// the oldest listen stream it may end under a bound reached.
func (f *inflight) take(ctx context.Context, user int64) *InFlightLimitError {
	var (
		ended   []context.CancelFunc
		another *slot // another user's stream ended, to be logged
	)
	defer func() { // outside the lock, which done takes
		for _, stop := range ended {
			stop()
		}
		if another != nil {
			f.log.InfoContext(ctx, "MCP listen stream of another user ended to serve a request past the replica's bound (logged once per tenure per requesting user)",
				"user", user, "ended_user", another.user, "limit", limitInFlightTotal, "tenure", ListenTenure)
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[user] >= f.max {
		l := f.oldestListen(func(l *slot) bool { return l.user == user })
		if l == nil {
			f.reg.refused.WithLabelValues(limitInFlight).Inc()
			return &InFlightLimitError{Limit: "requests in flight per user", Max: f.max, Env: EnvSessionsPerUser}
		}
		ended = append(ended, f.free(l, limitInFlight))
	}
	if f.all >= f.total {
		now := f.now()
		l := f.oldestListen(func(l *slot) bool { return l.user == user || now.Sub(l.since) >= ListenTenure })
		if l == nil {
			f.reg.refused.WithLabelValues(limitInFlightTotal).Inc()
			return &InFlightLimitError{Limit: "requests in flight of the replica", Max: f.total, Env: EnvSessions}
		}
		ended = append(ended, f.free(l, limitInFlightTotal))
		if l.user != user && f.toLog(user, now) {
			another = l
		}
	}
	f.n[user]++
	f.all++
	return nil
}

// toLog reports whether a request of user ending another user's stream
// at now is logged: the first in a tenure. f.mu is held.
func (f *inflight) toLog(user int64, now time.Time) bool {
	if last, ok := f.logged[user]; ok && now.Sub(last) < ListenTenure {
		return false
	}
	for u, last := range f.logged { // only the users of the last tenure are kept
		if now.Sub(last) >= ListenTenure {
			delete(f.logged, u)
		}
	}
	f.logged[user] = now
	return true
}

// oldestListen is the oldest listen stream keep accepts; nil when there
// is none. f.mu is held.
func (f *inflight) oldestListen(keep func(*slot) bool) *slot {
	for e := f.listens.Front(); e != nil; e = e.Next() {
		if l := e.Value.(*slot); keep(l) {
			return l
		}
	}
	return nil
}

// free gives l's place back, ended by the bound named limit, and returns
// its stop for the caller to call once f.mu is released. f.mu is held.
func (f *inflight) free(l *slot, limit string) context.CancelFunc {
	f.forget(l)
	l.freed = true
	f.reg.ended.WithLabelValues(limit).Inc()
	return l.stop
}

// listening marks sl a listen stream that stop ends: the first to give
// its place up to another request (another user's once its tenure is
// held).
func (f *inflight) listening(sl *slot, stop context.CancelFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !sl.freed {
		sl.stop, sl.since, sl.elem = stop, f.now(), f.listens.PushBack(sl)
	}
}

// done ends a request of user take counted, unless its place was given
// away; sl is its slot, nil for a request that never had one.
func (f *inflight) done(user int64, sl *slot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case sl == nil:
		f.release(user)
	case !sl.freed:
		f.forget(sl)
	}
}

// forget takes sl out of the counts. f.mu is held.
func (f *inflight) forget(sl *slot) {
	if sl.elem != nil {
		f.listens.Remove(sl.elem)
		sl.elem = nil
	}
	f.release(sl.user)
}

// release takes a request of user out of the counts. f.mu is held.
func (f *inflight) release(user int64) {
	f.all--
	if f.n[user]--; f.n[user] <= 0 {
		delete(f.n, user)
	}
}

// limitInFlight and limitInFlightTotal label the refusals of the bounds
// on stateless requests in flight, per user and per replica.
const (
	limitInFlight      = "per_user_in_flight"
	limitInFlightTotal = "replica_in_flight"
)

// discovered is server/discover's answer as this endpoint serves it:
// every version, the stateful ones in sessions (the SDK's stateless
// transport names only the stateless ones).
func discovered(res sdk.Result) sdk.Result {
	if d, ok := res.(*sdk.DiscoverResult); ok {
		d.SupportedVersions = slices.Clone(versions)
	}
	return res
}

// inputRequired is a tools/call result asking the client for input
// (SEP-2322): the SDK marks its own handlers' results so, and the
// engine's answer tools/call itself.
type inputRequired struct {
	*sdk.CallToolResult
}

func (r inputRequired) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ResultType    string              `json:"resultType"`
		InputRequests sdk.InputRequestMap `json:"inputRequests"`
		RequestState  string              `json:"requestState,omitempty"`
		Meta          sdk.Meta            `json:"_meta,omitempty"`
	}{"input_required", r.InputRequests, r.RequestState, r.Meta})
}

// completed is a tools/call result of 2026-07-28, where every result
// names its resultType: the SDK names its own handlers' results, and the
// engine answers tools/call itself.
type completed struct {
	*sdk.CallToolResult
}

func (r completed) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.CallToolResult)
	if err != nil {
		return nil, err
	}
	// b is an object with at least "content": the field goes first.
	return append([]byte(`{"resultType":"complete",`), b[1:]...), nil
}
