package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
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

// with guards a handler: a bearer token of at least the given role.
func (s *Server) with(min role, h http.HandlerFunc) http.HandlerFunc {
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
	t, err := s.Store.FindTokenByHash(r.Context(), auth.HashToken(tok))
	if errors.Is(err, store.ErrNotFound) {
		return principal{}, errors.New("invalid token")
	}
	if err != nil {
		return principal{}, fmt.Errorf("check token: %w", err)
	}
	if t.ExpireTime != nil && time.Now().After(*t.ExpireTime) {
		return principal{}, errors.New("token expired")
	}
	return principal{role: roleUser, userID: t.UserID}, nil
}
