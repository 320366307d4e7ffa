package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/header"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// role orders what a token may do: an admin may do everything, the service
// (RuoYi) the runtime routes for any user, a per-user token only for its
// own user.
type role int

const (
	roleUser role = iota
	roleService
	roleAdmin
)

func (r role) String() string {
	return [...]string{"user", "service", "admin"}[r]
}

// principal is who made a request.
type principal struct {
	role   role
	userID int64 // for roleUser
	// browser marks a console session: what it receives is shown in a
	// browser, so no credential value, not even masked, goes to it.
	browser bool
	// consoleOnly marks a per-user token that signs in to the console
	// only: refused as a bearer token; its sessions may approve calls
	// under BLINDEXEC_CONFIRM_VIA=console.
	consoleOnly bool
	// perms are a per-user token's fixed permission strings, nil when it
	// has none: they narrow what its user may use (issue 46).
	perms []string
	// tokenID is a per-user token's sys_ai_token.token_id: a run keeps
	// the token that started it.
	tokenID int64
	// tokenHash is the hash of the token it was found by (auth.HashToken):
	// the bearer token, or the one a console session signed in with. An
	// MCP session is bound to it, and hashing once a request is enough.
	tokenHash string
	// session is a console session's id (SessionEnds), "" for a bearer
	// token: its MCP sessions end at its sign-out.
	session string
}

// actsFor reports whether p may act for user id.
func (p principal) actsFor(id int64) bool {
	return p.role >= roleService || p.userID == id
}

// userFor resolves the user a runtime request acts for: the named one, or
// the token's own user when none is named.
func (p principal) userFor(named int64) (int64, error) {
	if p.role == roleUser {
		if named != 0 && named != p.userID {
			return 0, fmt.Errorf("user_id: a per-user token acts only for user %d", p.userID)
		}
		return p.userID, nil
	}
	return named, nil
}

type principalKey struct{}

func principalFrom(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// with guards a handler: a bearer token of at least the given role, and
// the outage grace (failClosed).
func (s *Server) with(min role, h http.HandlerFunc) http.HandlerFunc {
	return s.failClosed(s.authorized(min, h))
}

// authorized is with for a route that uses nothing the database holds
// beyond the token (metrics), and so serves past the outage grace.
func (s *Server) authorized(min role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r)
		if errors.Is(err, ErrTokenUnchecked) {
			s.Logger.WarnContext(r.Context(), "a token could not be checked", "err", err)
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "database_unavailable", ErrTokenUnchecked.Error(), nil)
			return
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="blindexec"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", err.Error(), nil)
			return
		}
		if p.role < min {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("this route needs the %s token; a %s token was given", min, p.role), nil)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		if s.Tracer != nil {
			s.serveTraced(w, r, p, h)
			return
		}
		h(w, r)
	}
}

var errNoToken = errors.New("a bearer token is required (Authorization: Bearer <token>)")

// ErrTokenUnchecked is a token whose row could not be read (the database
// did not answer within store.QueryTimeout): neither valid nor invalid,
// so a request bearing it is answered 503, never 401, which would tell
// the client (and the console's sign-in) that the token is not valid.
var ErrTokenUnchecked = errors.New("the token cannot be checked at the moment (the database did not answer); retry later")

// Sessions lets a browser session stand in for the bearer token: the one
// exception to "every route needs a bearer token" (the console, SPEC §10).
type Sessions interface {
	// TokenHash returns the hash (auth.HashToken) of the token the
	// request's session signed in with; ErrNoSession when it carries
	// none, another error when its session or CSRF token is not valid.
	TokenHash(r *http.Request) (string, error)
}

// SessionEnds is implemented by Sessions whose sessions end before their
// token does (the console's sign-out): a session's MCP sessions end with
// it (endRevoked), on every replica.
type SessionEnds interface {
	// SessionID is the id of the request's session, "" without one.
	SessionID(r *http.Request) string
	// Ended reads, now, the ids of the sessions signed out.
	Ended(ctx context.Context) (map[string]bool, error)
}

// ErrNoSession is what Sessions.TokenHash returns for a request without a
// session: the bearer token is then required.
var ErrNoSession = errors.New("no session")

func (s *Server) authenticate(r *http.Request) (principal, error) {
	h := header.Get(r.Header, "Authorization")
	if h == "" && s.Sessions != nil {
		hash, err := s.Sessions.TokenHash(r)
		switch {
		case err == nil:
			p, err := s.principalFor(r.Context(), hash)
			p.browser, p.tokenHash = true, hash
			if ends, ok := s.Sessions.(SessionEnds); ok {
				p.session = ends.SessionID(r)
			}
			return p, err
		case !errors.Is(err, ErrNoSession):
			return principal{}, err
		}
	}
	tok, ok := bearerToken(h)
	if !ok || tok == "" {
		return principal{}, errNoToken
	}
	if !s.isOperatorToken(tok) && !strings.HasPrefix(tok, auth.TokenPrefix) {
		return principal{}, errors.New("invalid token")
	}
	hash := auth.HashToken(tok)
	p, err := s.principalFor(r.Context(), hash)
	p.tokenHash = hash
	if err == nil && p.consoleOnly && r.Context().Value(signInKey{}) == nil {
		return principal{}, errConsoleOnly
	}
	return p, err
}

// errConsoleOnly refuses a console-only token given as a bearer token.
var errConsoleOnly = errors.New("this token signs in to the console only (/console/); it is refused on /v1 and /mcp")

// signInKey marks the console's sign-in check, where a console-only
// token is accepted.
type signInKey struct{}

func (s *Server) isOperatorToken(tok string) bool {
	return (s.AdminToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.AdminToken)) == 1) ||
		(s.ServiceToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.ServiceToken)) == 1)
}

// principalFor is who the token of that hash stands for: a session holds
// the hash, not the token, and is checked the same way on every request,
// so it ends when its token is revoked (after one poll of the counters).
func (s *Server) principalFor(ctx context.Context, hash string) (principal, error) {
	admin, service := s.operators.get(s)
	if admin != "" && subtle.ConstantTimeCompare([]byte(hash), []byte(admin)) == 1 {
		return principal{role: roleAdmin}, nil
	}
	if service != "" && subtle.ConstantTimeCompare([]byte(hash), []byte(service)) == 1 {
		return principal{role: roleService}, nil
	}
	t, err := s.lookupToken(ctx, hash)
	if err != nil {
		return principal{}, err
	}
	if !t.found {
		return principal{}, errors.New("invalid token")
	}
	if t.expires != nil && time.Now().After(*t.expires) {
		return principal{}, errors.New("token expired")
	}
	return principal{role: roleUser, userID: t.userID, consoleOnly: t.consoleOnly, perms: t.perms, tokenID: t.id}, nil
}

// operatorHashes are the hashes of the operator's tokens, taken once: the
// tokens are settings, fixed before the first request, and every request
// compares against them.
type operatorHashes struct {
	once           sync.Once
	admin, service string
}

func (o *operatorHashes) get(s *Server) (admin, service string) {
	o.take(s)
	return o.admin, o.service
}

func (o *operatorHashes) take(s *Server) {
	o.once.Do(func() {
		if s.AdminToken != "" {
			o.admin = auth.HashToken(s.AdminToken)
		}
		if s.ServiceToken != "" {
			o.service = auth.HashToken(s.ServiceToken)
		}
	})
}

// metrics serves GET /metrics to the metrics token, compared as the
// operator's tokens are (hashed, in constant time), or to the
// administrator's. The metrics token is no principal: every other route
// refuses it as a token it does not know.
func (s *Server) metrics(h http.HandlerFunc) http.HandlerFunc {
	admin := s.authorized(roleAdmin, h)
	return func(w http.ResponseWriter, r *http.Request) {
		if BearerIs(r, s.MetricsToken) {
			h(w, r)
			return
		}
		admin(w, r)
	}
}

// bearerToken is the token of an Authorization field of the Bearer
// scheme, whose name is case-insensitive (RFC 9110 §11.1): "bearer x",
// as some clients and hand-written curl send it, was answered "a bearer
// token is required" (newcomer80). The token is returned as sent.
func bearerToken(h string) (string, bool) {
	const scheme = "Bearer "
	if len(h) < len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	return h[len(scheme):], true
}

// BearerIs reports whether r's bearer token is one of tokens (those set),
// compared hashed and in constant time as the operator's tokens are, with
// no database read: /metrics's metrics token, and the detail of /readyz
// and of serve's start gate, which go to the administrator's token and
// the metrics token (any other is answered as no token: a probe's answer
// is never refused).
func BearerIs(r *http.Request, tokens ...string) bool {
	tok, ok := bearerToken(header.Get(r.Header, "Authorization"))
	if !ok {
		return false
	}
	got := []byte(auth.HashToken(tok))
	for _, t := range tokens {
		if t != "" && subtle.ConstantTimeCompare(got, []byte(auth.HashToken(t))) == 1 {
			return true
		}
	}
	return false
}

// Who is whom a token or session stands for, for the console.
type Who struct {
	Role   string `json:"role"` // admin, service or user
	UserID int64  `json:"user_id,omitempty"`
}

// WhoIs authenticates r as the routes do (bearer token or session).
func (s *Server) WhoIs(r *http.Request) (Who, error) {
	p, err := s.authenticate(r)
	if err != nil {
		return Who{}, err
	}
	return Who{Role: p.role.String(), UserID: p.userID}, nil
}

// WhoIsToken checks a token given at the console's sign-in.
func (s *Server) WhoIsToken(ctx context.Context, tok string) (Who, error) {
	r, err := http.NewRequestWithContext(context.WithValue(ctx, signInKey{}, true), http.MethodGet, "/", nil)
	if err != nil {
		return Who{}, err
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	return s.WhoIs(r)
}

// tokenCache keeps per-user token lookups, by hash, while the tokens'
// change counter stays where it was when they were read: a revocation on
// any replica (or by SQL) takes effect after one poll, and no request
// queries the database to authenticate.
type tokenCache struct {
	mu      sync.Mutex
	version int64
	m       map[string]cachedToken
	// ids are per-user tokens by user and id, for a call, a run or a
	// session naming its token (engine.Call.Token), whose hash it does
	// not hold.
	ids map[tokenKey]heldToken
}

type tokenKey struct{ user, id int64 }

// heldToken is a per-user token as a call naming it reads it.
type heldToken struct {
	found   bool
	expires *time.Time
	perms   []string    // nil: none; [] (an unreadable column) holds nothing
	held    access.Held // perms as a set, nil when none
}

// gone reports whether t is revoked or expired.
func (t heldToken) gone() bool {
	return !t.found || t.expires != nil && !t.expires.After(time.Now())
}

type cachedToken struct {
	found   bool
	id      int64
	userID  int64
	expires *time.Time
	// consoleOnly: the token's scope is store.TokenScopeConsole.
	consoleOnly bool
	// perms are the token's fixed permission strings (nil: none).
	perms []string
}

// at runs f on c locked, c emptied first if the tokens' counter moved
// from its version.
func (c *tokenCache) at(version int64, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		c.version, c.m, c.ids = version, nil, nil
	}
	f()
}

// tokenCacheMax bounds the cache (unknown tokens are cached too); past it,
// the cache starts afresh.
const tokenCacheMax = 10000

func (s *Server) lookupToken(ctx context.Context, hash string) (cachedToken, error) {
	version := s.Changes.Current().Tokens
	c := &s.tokens
	var t cachedToken
	var ok bool
	c.at(version, func() { t, ok = c.m[hash] })
	if ok {
		return t, nil
	}
	// Bounded: a database that stops answering would hold every request
	// of a token not read yet for as long as the connection lives.
	qctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	row, err := s.Store.FindTokenByHash(qctx, hash)
	cancel()
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return cachedToken{}, fmt.Errorf("%w: %w", ErrTokenUnchecked, err)
	default:
		t = cachedToken{found: true, id: row.ID, userID: row.UserID, expires: row.ExpireTime, consoleOnly: row.Scope == store.TokenScopeConsole}
		if t.perms, err = plugins.SplitPerms(row.Perms); err != nil {
			// A cell RuoYi's SQL wrote that is not in the form grants
			// nothing rather than nothing narrowed: deny when unsure.
			s.Logger.WarnContext(ctx, "a token's perms are unreadable: its user may use no tool with perms", "token_id", row.ID, "err", err)
			t.perms = []string{}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// The counter was read before the row: the entry is tagged no newer
	// than what it holds, so a change in between is reloaded next poll.
	if c.version == version {
		if c.m == nil || len(c.m) >= tokenCacheMax {
			c.m = make(map[string]cachedToken)
		}
		c.m[hash] = t
	}
	return t, nil
}

// tokenByID is user's token id while the tokens' change counter stays
// where it was (lookupToken's rule): a miss reads the user's tokens once.
func (s *Server) tokenByID(ctx context.Context, user, id int64) (heldToken, error) {
	version := s.Changes.Current().Tokens
	key := tokenKey{user, id}
	c := &s.tokens
	var t heldToken
	var ok bool
	c.at(version, func() { t, ok = c.ids[key] })
	if ok {
		return t, nil
	}
	rows, err := s.Store.ListTokens(ctx, &user)
	if err != nil {
		return heldToken{}, fmt.Errorf("check token: %w", err)
	}
	read := make(map[tokenKey]heldToken, len(rows)+1)
	read[key] = heldToken{} // not among them: revoked
	for _, row := range rows {
		h := heldToken{found: true, expires: row.ExpireTime}
		if h.perms, err = plugins.SplitPerms(row.Perms); err != nil {
			h.perms = []string{} // deny when unsure, as lookupToken does
		}
		if h.perms != nil {
			h.held = access.HeldOf(h.perms...)
		}
		read[tokenKey{user, row.ID}] = h
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version == version {
		if c.ids == nil || len(c.ids)+len(read) > tokenCacheMax {
			c.ids = make(map[tokenKey]heldToken, len(read))
		}
		maps.Copy(c.ids, read)
	}
	return read[key], nil
}

// tokenPerms is the engine's reading of a call's token (engine.Tokens),
// over the server's cache.
type tokenPerms struct{ s *Server }

func (tp tokenPerms) Perms(ctx context.Context, user, id int64) (access.Held, error) {
	t, err := tp.s.tokenByID(ctx, user, id)
	switch {
	case err != nil:
		return nil, err
	case t.gone():
		return access.Held{}, nil
	}
	return t.held, nil
}
