package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/blindexec/blindexec/auth"
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
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="blindexec"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", err.Error(), nil)
			return
		}
		if p.role < min {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("this route needs the %s token; a %s token was given", min, p.role), nil)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

var errNoToken = errors.New("a bearer token is required (Authorization: Bearer <token>)")

func (s *Server) authenticate(r *http.Request) (principal, error) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		return principal{}, errNoToken
	}
	if s.AdminToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.AdminToken)) == 1 {
		return principal{role: roleAdmin}, nil
	}
	if s.ServiceToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.ServiceToken)) == 1 {
		return principal{role: roleService}, nil
	}
	if !strings.HasPrefix(tok, auth.TokenPrefix) {
		return principal{}, errors.New("invalid token")
	}
	t, err := s.lookupToken(r.Context(), auth.HashToken(tok))
	if err != nil {
		return principal{}, err
	}
	if !t.found {
		return principal{}, errors.New("invalid token")
	}
	if t.expires != nil && time.Now().After(*t.expires) {
		return principal{}, errors.New("token expired")
	}
	return principal{role: roleUser, userID: t.userID}, nil
}

// tokenCache keeps per-user token lookups, by hash, while the tokens'
// change counter stays where it was when they were read: a revocation on
// any replica (or by SQL) takes effect after one poll, and no request
// queries the database to authenticate.
type tokenCache struct {
	mu      sync.Mutex
	version int64
	m       map[string]cachedToken
}

type cachedToken struct {
	found   bool
	userID  int64
	expires *time.Time
}

// tokenCacheMax bounds the cache (unknown tokens are cached too); past it,
// the cache starts afresh.
const tokenCacheMax = 10000

func (s *Server) lookupToken(ctx context.Context, hash string) (cachedToken, error) {
	version := s.Changes.Current().Tokens
	c := &s.tokens
	c.mu.Lock()
	if c.version != version {
		c.version, c.m = version, nil
	}
	t, ok := c.m[hash]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	row, err := s.Store.FindTokenByHash(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return cachedToken{}, fmt.Errorf("check token: %w", err)
	default:
		t = cachedToken{found: true, userID: row.UserID, expires: row.ExpireTime}
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
