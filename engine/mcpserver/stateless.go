package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

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
	if err := s.inflight.take(id.User); err != nil {
		s.log.WarnContext(r.Context(), "MCP request refused", "user", id.User, "err", err)
		w.Header().Set("Retry-After", "1")
		writeJSONError(w, http.StatusTooManyRequests, errorResponse(jsonrpc.ID{}, codeSessionLimit, err.Error(), map[string]any{"limit": err.Limit, "max": err.Max}))
		return
	}
	defer s.inflight.done(id.User)
	if !s.direct(w, r, id) {
		s.serveSDK(w, r, id)
	}
}

// serveSDK serves a request of the stateless era for id on the SDK's
// handler, with a server made for it.
func (s *Service) serveSDK(w http.ResponseWriter, r *http.Request, id Identity) {
	o := id.options(r.URL.Path)
	o.stateless = true
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
type inflight struct {
	max, total int
	reg        *registry // its refused counter

	mu  sync.Mutex
	n   map[int64]int
	all int
}

// take counts a request of user in flight until done(user) is called.
func (f *inflight) take(user int64) *InFlightLimitError {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[user] >= f.max {
		f.reg.refused.WithLabelValues(limitInFlight).Inc()
		return &InFlightLimitError{Limit: "requests in flight per user", Max: f.max, Env: EnvSessionsPerUser}
	}
	if f.all >= f.total {
		f.reg.refused.WithLabelValues(limitInFlightTotal).Inc()
		return &InFlightLimitError{Limit: "requests in flight of the replica", Max: f.total, Env: EnvSessions}
	}
	f.n[user]++
	f.all++
	return nil
}

// done ends a request of user take counted.
func (f *inflight) done(user int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
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
