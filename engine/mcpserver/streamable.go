package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/internal/header"
)

// MCP's streamable HTTP transport (2025-03-26 and later, stateful), the
// engine's own: each session's *sdk.Server is connected to an httpSession,
// which Handler feeds. It does what the SDK's StreamableHTTPHandler with
// JSONResponse does for the engine's clients, but decodes each POSTed
// message once (decodeMessage) and writes a successful answer without
// encoding it again (appendResponse): the SDK's handler decoded a
// tools/call six times, each into a fresh 32 KiB buffer, most of what a
// call cost /mcp (docs/benchmarks.md, issue 38).
//
// A POSTed request is answered by one application/json body, its
// response; notifications and the client's responses (to elicitation)
// are answered 202. Whatever else the server sends (tools/list_changed,
// elicitation/create) goes on the session's GET stream, or nowhere when
// none is open: the session checks for one before it asks (holdsStream).
// No event store: streams are not resumed.

// Identity is who makes a request to /mcp: the user its calls act for,
// and the credential that authenticated it (the token's hash, say). A
// session answers only the identity that opened it.
type Identity struct {
	User      int64
	Principal string
	// Narrow are the token's fixed permission strings, which narrow what
	// the user may use (access.Subject).
	Narrow []access.Held
	// Token is the token's id (engine.Call.Token, 0: none): a call names
	// it, and the executor reads its perms as they are at the decision
	// rather than Narrow, the session's copy. Principal's token: Same
	// need not compare it.
	Token int64
}

// options are the options of a server acting for id at endpoint.
func (id Identity) options(endpoint string) sessionOptions {
	return sessionOptions{user: id.User, narrow: id.Narrow, principal: id.Principal, token: id.Token, endpoint: endpoint}
}

// Same reports whether id and o are one identity: one user, one
// credential, and the credential's perms as they were. A token's perms
// changed since a session opened (on any replica, after one poll) make
// its requests another identity's: the session acted with the perms it
// was opened with.
func (id Identity) Same(o Identity) bool {
	return id.User == o.User && id.Principal == o.Principal && slices.EqualFunc(id.Narrow, o.Narrow, maps.Equal)
}

const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
)

// statefulVersions are the protocol versions a stateful streamable HTTP
// session serves: the SDK's, before 2026-07-28 (which, as the SDK's
// handler says, only a stateless server serves).
var statefulVersions = slices.DeleteFunc(sdk.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })

// errRejected wrapped in a Write error tells the SDK's connection that one
// message was not delivered, and that the session goes on (the SDK's
// jsonrpc2.ErrRejected: errors match by code).
var errRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// httpSession is one session of Handler: the sdk.Transport and
// sdk.Connection of its server, and the identity it answers.
type httpSession struct {
	id    string
	ident Identity
	ss    *sdk.ServerSession // set before the session is published
	sess  *session           // its server's
	svc   *Service

	incoming chan jsonrpc.Message // from POSTs to the server's Read
	done     chan struct{}        // closed by Close
	once     sync.Once

	mu      sync.Mutex
	waiting map[jsonrpc.ID]chan *jsonrpc.Response // POSTed requests by id, until answered

	smu    sync.Mutex
	stream chan []byte // the events of the open GET stream; nil when none
}

// streamBacklog bounds the events waiting for a GET stream's client. The
// stream's own request writes them, so that no goroutine of the server
// waits on a client that does not read; past the backlog they are
// refused, as when no stream is open.
const streamBacklog = 64

func (hs *httpSession) Connect(context.Context) (sdk.Connection, error) { return hs, nil }

// SupportsProtocolVersion tells the server what to offer server/discover.
func (hs *httpSession) SupportsProtocolVersion(v string) bool {
	return slices.Contains(statefulVersions, v)
}

func (hs *httpSession) SessionID() string { return hs.id }

func (hs *httpSession) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msg := <-hs.incoming:
		return msg, nil
	case <-hs.done:
		return nil, io.EOF
	}
}

// Write hands a response to the POST waiting for it and sends anything
// else on the GET stream.
func (hs *httpSession) Write(_ context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Response); ok {
		hs.mu.Lock()
		ch := hs.waiting[r.ID]
		delete(hs.waiting, r.ID)
		hs.mu.Unlock()
		if ch != nil {
			ch <- r // buffered: never blocks; unread when its client went away
		}
		return nil
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	hs.smu.Lock()
	defer hs.smu.Unlock()
	if hs.stream == nil {
		return fmt.Errorf("%w: session %s has no GET stream open", errRejected, hs.id)
	}
	select {
	case hs.stream <- b:
		return nil
	default:
		return fmt.Errorf("%w: the GET stream of session %s has %d events unread", errRejected, hs.id, streamBacklog)
	}
}

// writeEvent sends data as one server-sent event and flushes it.
func writeEvent(w http.ResponseWriter, data []byte) error {
	b := make([]byte, 0, len("event: message\ndata: \n\n")+len(data))
	b = append(append(append(b, "event: message\ndata: "...), data...), "\n\n"...)
	if _, err := w.Write(b); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}

// Close ends the session's connection; the server calls it when the
// session ends (DELETE, idle expiry, a cap).
func (hs *httpSession) Close() error {
	hs.once.Do(func() {
		close(hs.done)
		hs.svc.httpSessions.CompareAndDelete(hs.id, hs)
	})
	return nil
}

// end ends the session for why: its calls waiting for a person's answer
// end first, answered on their own POSTs, since the SDK's Close waits for
// the calls in flight and an answer can no longer reach the session.
func (hs *httpSession) end(why error) {
	hs.sess.end(why)
	hs.ss.Close()
}

// deliver gives msg to the server; false when the session has ended.
func (hs *httpSession) deliver(msg jsonrpc.Message) bool {
	select {
	case hs.incoming <- msg:
		return true
	case <-hs.done:
		return false
	}
}

// forget stops waiting for the response to id.
func (hs *httpSession) forget(id jsonrpc.ID) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	delete(hs.waiting, id)
}

// pending reports whether the server has not yet answered id.
func (hs *httpSession) pending(id jsonrpc.ID) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	_, ok := hs.waiting[id]
	return ok
}

// serve gives msg, POSTed by r, to the server and answers the POST: a
// request with its response, anything else 202.
func (hs *httpSession) serve(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if ok {
		req.Extra = &sdk.RequestExtra{Header: r.Header} // traceparent (Options.Tracer)
	}
	if !ok || !req.IsCall() {
		if !hs.deliver(msg) {
			http.Error(w, "session ended", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	ch := make(chan *jsonrpc.Response, 1)
	hs.mu.Lock()
	if _, dup := hs.waiting[req.ID]; dup {
		hs.mu.Unlock()
		writeJSONError(w, http.StatusBadRequest, errorResponse(req.ID, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("duplicate in-flight request ID %v", req.ID.Raw()), nil))
		return
	}
	hs.waiting[req.ID] = ch
	hs.mu.Unlock()
	if !hs.deliver(req) {
		hs.forget(req.ID)
		http.Error(w, "session ended", http.StatusNotFound)
		return
	}
	var resp *jsonrpc.Response
	select {
	case resp = <-ch:
	case <-hs.done:
		select {
		case resp = <-ch: // answered as it ended
		default:
			http.Error(w, "session ended", http.StatusNotFound)
			return
		}
	case <-r.Context().Done():
		// The client went away: the call is cancelled, as the client
		// itself would cancel it. Its id stays taken until the server
		// answers (Write drops the answer), so that a request reusing it
		// meanwhile is refused instead of given this call's answer.
		if hs.pending(req.ID) {
			params, _ := json.Marshal(map[string]any{"requestId": req.ID.Raw(), "reason": "the client disconnected"})
			hs.deliver(&jsonrpc.Request{Method: "notifications/cancelled", Params: params})
		}
		return
	}
	b, ok := appendResponse(nil, resp)
	if !ok {
		var err error
		if b, err = jsonrpc.EncodeMessage(resp); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// Handler serves the catalog over streamable HTTP (mount it at /mcp), in
// sessions: initialize opens one, bound to the identity authn gives (an
// error answers 401 with its message); the Mcp-Session-Id it returns is
// refused (403) to any other identity, another token or the same token
// naming another user. Sessions live in this process: behind a load
// balancer, route a session's requests to one replica by that header
// (sticky sessions). They are bounded by Options.Sessions: past a cap,
// initialize ends the least recently used idle session under it, or is
// refused (429, a JSON-RPC error naming the limit) when every one has a
// request in flight.
func (s *Service) Handler(authn func(*http.Request) (Identity, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := authn(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="blindexec"`)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			// Unescaped as the API's errors are: an SDK shows the body raw,
			// and "Bearer \u003ctoken\u003e" is no way to tell a person.
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			enc.Encode(map[string]any{"error": map[string]string{"code": "unauthorized", "message": err.Error()}})
			return
		}
		if rebound(r) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		if statelessRequest(r) {
			s.serveStateless(w, r, id)
			return
		}
		if v := header.Get(r.Header, headerProtocol); v != "" && !slices.Contains(statefulVersions, v) {
			http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version (supported versions: %s)", strings.Join(statefulVersions, ",")), http.StatusBadRequest)
			return
		}
		switch r.Method {
		case http.MethodPost:
			s.servePOST(w, r, id)
		case http.MethodGet:
			if _, stream := accepts(header.Values(r.Header, "Accept")); !stream {
				http.Error(w, "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest)
				return
			}
			if hs := s.session(w, r, id); hs != nil {
				s.serveStream(w, r, hs)
			}
		case http.MethodDelete:
			if hs := s.session(w, r, id); hs != nil {
				hs.end(errDeleted)
				w.WriteHeader(http.StatusNoContent)
			}
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}
	})
}

// session is the session r names, bound to id; nil when there is none
// for id, the error written.
func (s *Service) session(w http.ResponseWriter, r *http.Request, id Identity) *httpSession {
	sid := header.Get(r.Header, headerSession)
	if sid == "" {
		http.Error(w, fmt.Sprintf("Bad Request: %s requires an %s header", r.Method, headerSession), http.StatusBadRequest)
		return nil
	}
	v, ok := s.httpSessions.Load(sid)
	if !ok {
		http.Error(w, "session not found", http.StatusNotFound)
		return nil
	}
	if hs := v.(*httpSession); hs.ident.Same(id) {
		return hs
	}
	http.Error(w, "session user mismatch", http.StatusForbidden)
	return nil
}

// servePOST serves one POSTed JSON-RPC message: an initialize without a
// session opens one; anything else goes to the session named.
func (s *Service) servePOST(w http.ResponseWriter, r *http.Request, id Identity) {
	if ct, _, _ := strings.Cut(header.Get(r.Header, "Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return
	}
	if j, stream := accepts(header.Values(r.Header, "Accept")); !j || !stream {
		http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
		return
	}
	body, checked, err := heldOrRead(w, r)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return
	case len(body) == 0:
		http.Error(w, "POST requires a non-empty body", http.StatusBadRequest)
		return
	}
	msg, err := decode(body, checked)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, errorLine(err))
		return
	}
	if header.Get(r.Header, headerSession) != "" {
		if hs := s.session(w, r, id); hs != nil {
			defer s.sessions.use(hs.id, id.User)()
			hs.serve(w, r, msg)
		}
		return
	}
	if statelessBody(body) {
		// A request of the stateless era without its header: the SDK's
		// handler answers HeaderMismatch.
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.serveStateless(w, r, id)
		return
	}
	if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "initialize" || !req.IsCall() {
		var reqID jsonrpc.ID
		if ok {
			reqID = req.ID
		}
		writeJSONError(w, http.StatusBadRequest, errorResponse(reqID, jsonrpc.CodeInvalidRequest,
			"no session: send initialize without "+headerSession+" to open one, then this session's id in "+headerSession, nil))
		return
	}
	s.open(w, r, id, msg.(*jsonrpc.Request))
}

// open serves an initialize that opens a session of id, within the
// session limits.
func (s *Service) open(w http.ResponseWriter, r *http.Request, id Identity, init *jsonrpc.Request) {
	if err := s.sessions.reserve(id.User); err != nil {
		s.log.WarnContext(r.Context(), "MCP session refused", "user", id.User, "err", err)
		refuse(w, init.ID, err.(*SessionLimitError))
		return
	}
	hs := &httpSession{id: rand.Text(), ident: id, svc: s, incoming: make(chan jsonrpc.Message), done: make(chan struct{}),
		waiting: map[jsonrpc.ID]chan *jsonrpc.Response{}}
	// The session outlives r: the SDK detaches its connection from r's
	// cancellation, keeping its values.
	hs.sess = s.newSession(id.options(r.URL.Path))
	ss, err := hs.sess.server.Connect(r.Context(), hs, nil)
	if err != nil {
		s.sessions.cancel(id.User)
		s.log.ErrorContext(r.Context(), "MCP session not connected", "err", err)
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return
	}
	hs.ss = ss
	s.httpSessions.Store(hs.id, hs)
	w.Header().Set(headerSession, hs.id)
	hs.serve(w, r, init)
	if ss.InitializeParams() == nil { // the initialize failed
		ss.Close()
		s.sessions.cancel(id.User)
		return
	}
	s.sessions.add(id.User, ss)
}

// serveStream holds r open as hs's GET stream, writing the server's
// events, until the client goes, a write fails, the session ends or the
// Service closes.
func (s *Service) serveStream(w http.ResponseWriter, r *http.Request, hs *httpSession) {
	hs.smu.Lock()
	if hs.stream != nil {
		hs.smu.Unlock()
		http.Error(w, "the session's GET stream is already open", http.StatusConflict)
		return
	}
	w.Header().Set("Cache-Control", "no-store, no-transform") // what a stream tells stays in no cache
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	// A comment, so that proxies forward the headers at once.
	io.WriteString(w, ": ok\n\n")
	http.NewResponseController(w).Flush()
	events := make(chan []byte, streamBacklog)
	hs.stream = events
	hs.smu.Unlock()
	defer func() {
		hs.smu.Lock()
		hs.stream = nil
		hs.smu.Unlock()
	}()
	for {
		select {
		case b := <-events:
			if writeEvent(w, b) != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-hs.done:
			return
		case <-s.closing.Done():
			return
		}
	}
}

// holdsStream reports whether the HTTP session id has its GET stream
// open: a server-to-client request (elicitation) reaches the client only
// on it.
func (s *Service) holdsStream(id string) bool {
	v, ok := s.httpSessions.Load(id)
	if !ok {
		return false
	}
	hs := v.(*httpSession)
	hs.smu.Lock()
	defer hs.smu.Unlock()
	return hs.stream != nil
}

// accepts reports whether an Accept header's values take JSON and event
// streams, as the SDK's handler reads them.
func accepts(values []string) (jsonOK, streamOK bool) {
	if len(values) == 1 && values[0] == acceptBoth {
		return true, true // what the SDKs' clients send: nothing to split
	}
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(t, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// acceptBoth is the Accept header the go-sdk's and the TypeScript SDK's
// clients send with every POST.
const acceptBoth = "application/json, text/event-stream"

// rebound reports a request to a loopback address naming another host:
// a web page's DNS rebinding, which the SDK's handler refuses too.
func rebound(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && loopbackAddr(local) && !loopback(r.Host)
}

// loopbackAddr is loopback(a.String()) without making the string (two
// allocations on every request) for the usual TCP address.
func loopbackAddr(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	return loopback(a.String())
}

func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// refuse answers an initialize over a session limit: 429 and a JSON-RPC
// error naming the limit, with the request's id.
func refuse(w http.ResponseWriter, id jsonrpc.ID, e *SessionLimitError) {
	w.Header().Set("Retry-After", "1")
	writeJSONError(w, http.StatusTooManyRequests, errorResponse(id, codeSessionLimit, e.Error(), map[string]any{"limit": e.Limit, "max": e.Max}))
}

// codeSessionLimit is the JSON-RPC error code of a session refused over a
// limit (the implementation-defined server error range).
const codeSessionLimit = -32001

func writeJSONError(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}
