package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/internal/httpbody"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// sessionKey identifies a session: the server's id and the hash of the
// credentials its auth config reads ("" when it reads none); own, when
// not 0, makes it a session of one use, which nothing else shares (an SSE
// listing's, Manager.Tools).
type sessionKey struct {
	server, creds string
	own           uint64
}

// session is an open (or opening) client session. ready is closed once cs
// or err is set; inflight and lastUsed are guarded by Manager.mu.
type session struct {
	key      sessionKey
	ready    chan struct{}
	cs       *sdk.ClientSession
	at       *authTransport // nil for stdio
	held     *heldSchemas
	err      error
	inflight int
	lastUsed time.Time
	dropped  bool
}

func (s *session) secrets() []string {
	if s.at == nil {
		return nil
	}
	return s.at.secrets()
}

func (s *session) close() {
	<-s.ready
	if s.cs != nil {
		s.cs.Close()
	}
}

// acquire returns the ready session of key, opening it when there is none;
// concurrent callers of a new key wait for the one handshake. A handshake
// that failed returns its session beside the error: what its transport
// sent (an oauth2 access token) is masked in what the failure says.
func (m *Manager) acquire(ctx context.Context, key sessionKey, srv *serverConfig, creds map[string]string) (*session, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("MCP manager closed")
	}
	s := m.sessions[key]
	if s == nil {
		s = &session{key: key, ready: make(chan struct{})}
		m.sessions[key] = s
		evicted := m.evictLocked()
		m.mu.Unlock()
		for _, e := range evicted {
			e.close()
		}
		s.held = &heldSchemas{}
		s.cs, s.at, s.err = m.connect(ctx, srv, creds, s.held)
		if s.err != nil {
			m.mu.Lock()
			if m.sessions[key] == s {
				delete(m.sessions, key)
			}
			m.mu.Unlock()
		}
		close(s.ready)
	} else {
		m.mu.Unlock()
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.err != nil {
		return s, s.err
	}
	m.mu.Lock()
	s.inflight++
	s.lastUsed = time.Now()
	m.mu.Unlock()
	return s, nil
}

func (m *Manager) release(s *session) {
	m.mu.Lock()
	s.inflight--
	s.lastUsed = time.Now()
	closeNow := s.dropped && s.inflight == 0
	m.mu.Unlock()
	if closeNow {
		s.close()
	}
}

// drop forgets a broken session; it is closed once no call uses it.
func (m *Manager) drop(s *session) {
	m.mu.Lock()
	if m.sessions[s.key] == s {
		delete(m.sessions, s.key)
	}
	s.dropped = true
	closeNow := s.inflight == 0
	m.mu.Unlock()
	if closeNow {
		s.close()
	}
}

// evictLocked removes idle sessions past IdleTimeout and, while more than
// MaxSessions remain, the least recently used idle ones. It returns them
// for the caller to close outside the lock.
func (m *Manager) evictLocked() []*session {
	idle := cmp.Or(m.IdleTimeout, DefaultIdleTimeout)
	var out, candidates []*session
	for k, s := range m.sessions {
		if s.inflight > 0 || !isReady(s) {
			continue
		}
		if time.Since(s.lastUsed) > idle {
			delete(m.sessions, k)
			out = append(out, s)
			continue
		}
		candidates = append(candidates, s)
	}
	excess := len(m.sessions) - cmp.Or(m.MaxSessions, DefaultMaxSessions)
	if excess > 0 {
		slices.SortFunc(candidates, func(a, b *session) int { return a.lastUsed.Compare(b.lastUsed) })
		for _, s := range candidates[:min(excess, len(candidates))] {
			delete(m.sessions, s.key)
			out = append(out, s)
		}
	}
	return out
}

func isReady(s *session) bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// janitor closes idle sessions even when no call comes to do it.
func (m *Manager) janitor() {
	t := time.NewTicker(cmp.Or(m.IdleTimeout, DefaultIdleTimeout) / 2)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.mu.Lock()
			evicted := m.evictLocked()
			m.mu.Unlock()
			for _, s := range evicted {
				s.close()
			}
		}
	}
}

// authTransport applies a server's static headers and auth config to each
// request bound for the server's own origin, with one user's credentials.
type authTransport struct {
	base   http.RoundTripper
	auth   *auth.Authenticator
	origin string
	srv    *serverConfig
	creds  map[string]string
	held   *heldSchemas // sees the elicitations in the server's responses
	limit  int64        // bytes read of a body that is not an event stream
	sse    bool         // the SSE transport: answers come on the session's stream

	mu       sync.Mutex
	applied  []string
	listings map[*readBudget]struct{} // charged what the SSE stream brings
}

func newAuthTransport(base http.RoundTripper, a *auth.Authenticator, srv *serverConfig, creds map[string]string, held *heldSchemas, limit int64) (*authTransport, error) {
	req, err := http.NewRequest(http.MethodGet, srv.url, nil)
	if err != nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		return nil, fmt.Errorf("MCP server %s: %q is not an absolute http or https URL", srv.name, redact.URL(srv.url))
	}
	if base == nil {
		base = http.DefaultTransport
	}
	// Keep only the keys the auth config reads: the session must not hold
	// more of the user's secrets than it sends.
	own := make(map[string]string)
	for _, k := range srv.auth.CredentialKeys() {
		own[k] = creds[k]
	}
	return &authTransport{base: base, auth: a, origin: originOf(req), srv: srv, creds: own, held: held, limit: limit,
		sse: srv.transport == store.TransportSSE}, nil
}

func originOf(r *http.Request) string { return r.URL.Scheme + "://" + r.URL.Host }

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if b, ok := req.Context().Value(readBudgetKey{}).(*readBudget); ok && t.sse {
		// Whatever origin the endpoint event named: the answers come on
		// the stream all the same (before, an endpoint elsewhere left a
		// listing uncharged, read to its 1,000th page).
		b.charge(t)
	}
	if originOf(req) != t.origin {
		return t.bounded(t.base.RoundTrip(req))
	}
	req = req.Clone(req.Context())
	for k, v := range t.srv.headers {
		req.Header.Set(k, v)
	}
	for k, v := range callHeaders(req.Context()) {
		req.Header.Set(k, v)
	}
	if t.srv.auth.Type != "" && t.srv.auth.Type != plugins.AuthNone || len(t.srv.auth.Mapping) > 0 {
		applied, err := t.auth.Apply(req.Context(), t.srv.auth, t.creds, req)
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		t.mu.Lock()
		t.applied = applied.Secrets
		t.mu.Unlock()
		if len(applied.Secrets) > 0 {
			// The server's keys: not in plain text past loopback and the
			// operator's list (egress.PlaintextError).
			req = req.WithContext(egress.WithCredentials(req.Context(), applied.Headers))
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		t.held.observe(resp)
	}
	return t.bounded(resp, err)
}

// bounded caps what is read of a body, but for an event stream's, whose
// events the SDK bounds one by one (MaxEventSize) and which may last as
// long as the session.
func (t *authTransport) bounded(resp *http.Response, err error) (*http.Response, error) {
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		resp.Body = httpbody.Capped(resp.Body, t.limit, func() error { return &messageTooLargeError{Limit: t.limit} })
	} else if t.sse {
		resp.Body = &metered{ReadCloser: resp.Body, t: t}
	}
	if resp.Request != nil {
		if b, ok := resp.Request.Context().Value(readBudgetKey{}).(*readBudget); ok {
			resp.Body = &budgeted{ReadCloser: resp.Body, budget: b}
		}
	}
	return resp, nil
}

// readBudget is what the answers to one listing's requests may hold
// together, raw: the bound on the tools a listing keeps does not count
// what a server pads its pages with (fields the engine ignores), which
// over its pages could be gigabytes read. Over streamable HTTP it follows
// the listing's requests, which carry its context, and their answers'
// bodies. Over SSE the answers come on the session's one event stream,
// which the SDK reads ahead and splits into messages out of sight: the
// listing is charged all that stream brings while it is in flight (from
// its first request to its end), on a session of its own (Manager.Tools)
// so that this is its own answers and what the server sends unasked, and
// is ended once that is over the budget.
type readBudget struct {
	left   atomic.Int64
	max    int64
	refuse context.CancelCauseFunc // ends the listing's context

	mu    sync.Mutex
	on    []*authTransport // SSE sessions charging this budget
	ended bool
}

type readBudgetKey struct{}

// withReadBudget gives ctx's requests max bytes of answers together. end
// stops charging it; a listing over it is cancelled with an
// *answersTooLargeError as the cause (see overBudget).
func withReadBudget(ctx context.Context, max int64) (_ context.Context, end func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	b := &readBudget{max: max, refuse: cancel}
	b.left.Store(max)
	return context.WithValue(ctx, readBudgetKey{}, b), func() {
		b.mu.Lock()
		b.ended = true
		on := b.on
		b.mu.Unlock()
		for _, t := range on {
			t.mu.Lock()
			delete(t.listings, b)
			t.mu.Unlock()
		}
		cancel(nil)
	}
}

// take charges n bytes read, refusing the listing once over.
func (b *readBudget) take(n int) error {
	if b.left.Add(-int64(n)) < 0 {
		err := &answersTooLargeError{Limit: b.max}
		b.refuse(err)
		return err
	}
	return nil
}

// charge makes the SSE stream of t charged to b from now until b ends.
func (b *readBudget) charge(t *authTransport) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.listings[b]; ok {
		return
	}
	if t.listings == nil {
		t.listings = make(map[*readBudget]struct{})
	}
	t.listings[b] = struct{}{}
	b.on = append(b.on, t)
}

// overBudget is the cause of ctx's end when a listing's answers went over
// its budget: the SDK reports a call's cancelled context as such, or the
// budgeted body's error as read, depending on which comes first.
func overBudget(ctx context.Context, err error) error {
	var tl *answersTooLargeError
	if errors.As(context.Cause(ctx), &tl) || errors.As(err, &tl) {
		return tl
	}
	return err
}

// budgeted is a body whose reads are taken from a readBudget.
type budgeted struct {
	io.ReadCloser
	budget *readBudget
}

func (b *budgeted) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err := b.budget.take(n); err != nil {
		return n, err
	}
	return n, err
}

// metered is an SSE session's event stream, whose reads are charged to
// the listings in flight on the session; it is never ended by them.
type metered struct {
	io.ReadCloser
	t *authTransport
}

func (m *metered) Read(p []byte) (int, error) {
	n, err := m.ReadCloser.Read(p)
	if n > 0 {
		m.t.mu.Lock()
		for b := range m.t.listings {
			if b.take(n) != nil {
				delete(m.t.listings, b) // refused already
			}
		}
		m.t.mu.Unlock()
	}
	return n, err
}

// answersTooLargeError ends a listing whose answers, as read, are over
// its readBudget.
type answersTooLargeError struct{ Limit int64 }

func (e *answersTooLargeError) Error() string {
	return fmt.Sprintf("the MCP server's answers to one listing are larger than %d bytes in all (twice %s and one answer's bound)", e.Limit, plugins.EnvImportMaxMB)
}

// messageTooLargeError: an MCP server's answer went past
// Manager.MaxMessageBytes.
type messageTooLargeError struct{ Limit int64 }

func (e *messageTooLargeError) Error() string {
	return fmt.Sprintf("the MCP server's answer is larger than %d bytes", e.Limit)
}

// callHeadersKey carries a call's own headers (Call.Headers) from
// CallTool, through the SDK, which makes its HTTP requests with the
// call's context, to authTransport: sessions are shared by the calls of
// many plugins, so per-plugin headers cannot live on the session.
type callHeadersKey struct{}

func withCallHeaders(ctx context.Context, h map[string]string) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return context.WithValue(ctx, callHeadersKey{}, h)
}

func callHeaders(ctx context.Context) map[string]string {
	h, _ := ctx.Value(callHeadersKey{}).(map[string]string)
	return h
}

func (t *authTransport) secrets() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applied
}
