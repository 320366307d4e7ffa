package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/internal/httpbody"
)

// Identity is who makes a request to /mcp: the user its calls act for,
// and the credential that authenticated it (the token's hash, say). A
// session answers only the identity that opened it.
type Identity struct {
	User      int64
	Principal string
}

// key names the identity for the SDK's session check.
func (id Identity) key() string {
	return id.Principal + "\x00" + strconv.FormatInt(id.User, 10)
}

type identityKey struct{}

// serverSlot lets the SDK's two getServer calls of one request (the
// protocol check, then the new session) share one server.
type serverSlot struct{ srv *sdk.Server }

type slotKey struct{}

// Handler serves the catalog over streamable HTTP (mount it at /mcp), in
// sessions: initialize opens one, bound to the identity authn gives (an
// error answers 401 with its message); the Mcp-Session-Id it returns is refused (403) to
// any other identity, another token or the same token naming another
// user. Sessions live in this process: behind a load balancer, route a
// session's requests to one replica by that header (sticky sessions).
// They are bounded by Options.Sessions: past a cap, initialize ends the
// least recently used idle session under it, or is refused (429, a
// JSON-RPC error naming the limit) when every one has a request in
// flight.
func (s *Service) Handler(authn func(*http.Request) (Identity, error)) http.Handler {
	// Requests of an existing session need a server only for the SDK's
	// protocol version check.
	probe := sdk.NewServer(&sdk.Implementation{Name: "blindexec", Version: "1"}, nil)
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		if r.Header.Get("Mcp-Session-Id") != "" {
			return probe
		}
		slot := r.Context().Value(slotKey{}).(*serverSlot)
		if slot.srv == nil {
			slot.srv = s.NewServer(r.Context().Value(identityKey{}).(Identity).User)
		}
		return slot.srv
	}, &sdk.StreamableHTTPOptions{Logger: s.log, SessionTimeout: s.opts.Sessions.idle(), MaxRequestBodyBytes: httpbody.MaxJSON,
		// A POST is answered with one JSON body rather than an event
		// stream: no tool of ours sends messages while it runs, and the
		// stream's machinery cost /mcp a tenth of its calls' time
		// (docs/benchmarks.md). Notifications (tools/list_changed) go on
		// the session's GET stream either way.
		JSONResponse: true})
	// The SDK binds a session to the TokenInfo.UserID of the request that
	// opened it and refuses it to others; authn has already checked the
	// token, so the verifier only names the identity.
	bound := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: r.Context().Value(identityKey{}).(Identity).key()}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := authn(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="blindexec"`)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "unauthorized", "message": err.Error()}})
			w.Write(append(body, '\n'))
			return
		}
		ctx := context.WithValue(r.Context(), identityKey{}, id)
		ctx = context.WithValue(ctx, slotKey{}, &serverSlot{})
		sid := r.Header.Get("Mcp-Session-Id")
		switch {
		case r.Method == http.MethodGet: // a session's stream: it ends with Close
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(s.closing, cancel)()
			if sid != "" {
				n, _ := s.streams.LoadOrStore(sid, new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
				defer func() {
					if n.(*atomic.Int32).Add(-1) == 0 {
						s.streams.CompareAndDelete(sid, n)
					}
				}()
			}
		case sid != "":
			defer s.sessions.use(sid, id.User)()
		case r.Method == http.MethodPost: // a new session
			s.openSession(w, r.WithContext(ctx), id.User, bound)
			return
		}
		bound.ServeHTTP(w, r.WithContext(ctx))
	})
}

// openSession serves a request that opens a session of user, within the
// session limits.
func (s *Service) openSession(w http.ResponseWriter, r *http.Request, user int64, next http.Handler) {
	if err := s.sessions.reserve(user); err != nil {
		s.log.WarnContext(r.Context(), "MCP session refused", "user", user, "err", err)
		refuse(w, r, err.(*SessionLimitError))
		return
	}
	next.ServeHTTP(w, r)
	if srv := r.Context().Value(slotKey{}).(*serverSlot).srv; srv != nil {
		for ss := range srv.Sessions() {
			if ss.InitializeParams() != nil { // else the SDK has closed it
				s.sessions.add(user, ss)
				return
			}
		}
	}
	s.sessions.cancel(user)
}

// refuse answers an initialize over a session limit: 429 and a JSON-RPC
// error naming the limit, with the request's id.
func refuse(w http.ResponseWriter, r *http.Request, e *SessionLimitError) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, httpbody.MaxJSON))
	id := json.RawMessage("null")
	if v := gjson.GetBytes(body, "id"); v.Type == gjson.Number || v.Type == gjson.String {
		id = json.RawMessage(v.Raw)
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": codeSessionLimit, "message": e.Error(), "data": map[string]any{"limit": e.Limit, "max": e.Max}}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(append(out, '\n'))
}

// codeSessionLimit is the JSON-RPC error code of a session refused over a
// limit (the implementation-defined server error range).
const codeSessionLimit = -32001
