package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/blindexec/blindexec/connections"
)

// connectionRoutes serves providers (the administrator's), users'
// connections, and the flow's unauthenticated browser routes
// (/oauth/start/{handle}, /oauth/callback, /oauth/confirm), which are
// bound to the flow's state and cookie instead of a token.
func (s *Server) connectionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/oauth/providers", s.with(roleAdmin, s.putProvider))
	// Readable by every token: a user's page offers Connect from them;
	// nothing in a provider's answer is secret.
	mux.HandleFunc("GET /v1/oauth/providers", s.with(roleUser, s.listProviders))
	mux.HandleFunc("GET /v1/oauth/providers/{name}", s.with(roleUser, s.getProvider))
	mux.HandleFunc("DELETE /v1/oauth/providers/{name}", s.with(roleAdmin, s.deleteProvider))
	mux.HandleFunc("POST /v1/connections/{provider}/authorize", s.with(roleUser, s.authorizeConnection))
	mux.HandleFunc("GET /v1/connections", s.with(roleUser, s.listConnections))
	mux.HandleFunc("DELETE /v1/connections/{provider}", s.with(roleUser, s.deleteConnection))
	flow := s.Connections.Handler(s.sessionUser)
	mux.Handle("GET "+connections.StartPath, flow)
	mux.Handle("GET "+connections.CallbackPath, flow)
	mux.Handle("POST "+connections.ConfirmPath, flow)
}

// sessionUser tells whom the console session of the browser opening a
// start URL stands for, so that a link made for one user is refused in a
// browser signed in as another (the hand-over attack).
func (s *Server) sessionUser(r *http.Request) (int64, bool) {
	if s.Sessions == nil {
		return 0, false
	}
	hash, err := s.Sessions.TokenHash(r)
	if err != nil {
		return 0, false // none, or one that has ended: it stands for nobody
	}
	p, err := s.principalFor(r.Context(), hash)
	if err != nil {
		return 0, false
	}
	return p.userID, true
}

func (s *Server) putProvider(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	var p connections.Provider
	if !decodeBody(w, r, &p) {
		return
	}
	out, err := s.Connections.PutProvider(r.Context(), p)
	if err != nil {
		s.connectionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listProviders(w http.ResponseWriter, r *http.Request) {
	ps, err := s.Connections.Providers(r.Context())
	if err != nil {
		s.connectionError(w, r, err)
		return
	}
	callback, _ := s.Connections.CallbackURL()
	writeJSON(w, http.StatusOK, map[string]any{"providers": ps, "redirect_uri": callback})
}

func (s *Server) getProvider(w http.ResponseWriter, r *http.Request) {
	p, err := s.Connections.Provider(r.Context(), r.PathValue("name"))
	if err != nil {
		s.connectionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) deleteProvider(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	if err := s.Connections.DeleteProvider(r.Context(), r.PathValue("name")); err != nil {
		s.connectionError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// authorizeRequest is the body of POST /v1/connections/{provider}/authorize.
type authorizeRequest struct {
	UserID      UserID   `json:"user_id"`
	DisplayName string   `json:"display_name"`
	Scopes      []string `json:"scopes"`
}

func (s *Server) authorizeConnection(w http.ResponseWriter, r *http.Request) {
	var req authorizeRequest
	if r.ContentLength != 0 && !decodeStrict(w, r, &req) {
		return
	}
	if req.DisplayName != "" && principalFrom(r.Context()).role == roleUser {
		// The confirmation page's name is the hand-over's defence: the
		// one asking for a link for itself must not choose it, or it
		// would name the person it means to hand the link to.
		writeError(w, http.StatusForbidden, "forbidden", "display_name: named by the service or the administrator only; a per-user token's link names its engine user", nil)
		return
	}
	user, ok := s.connectionUser(w, r, int64(req.UserID))
	if !ok {
		return
	}
	u, err := s.Connections.Authorize(r.Context(), user, r.PathValue("provider"), req.DisplayName, req.Scopes...)
	if err != nil {
		s.connectionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"url": u, "expires_at": time.Now().Add(connections.FlowTTL).UTC().Truncate(time.Second)})
}

// listConnections answers GET /v1/connections?user_id=: a user's
// connections (a per-user token sees its own), or, for the administrator
// and the service without user_id, everyone's.
func (s *Server) listConnections(w http.ResponseWriter, r *http.Request) {
	named, ok := queryUserID(w, r)
	if !ok {
		return
	}
	p := principalFrom(r.Context())
	user, err := p.userFor(named)
	if err != nil {
		writeError(w, http.StatusForbidden, "forbidden", err.Error(), nil)
		return
	}
	cs, err := s.Connections.List(r.Context(), user)
	if err != nil {
		s.connectionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connections": cs})
}

func (s *Server) deleteConnection(w http.ResponseWriter, r *http.Request) {
	named, ok := queryUserID(w, r)
	if !ok {
		return
	}
	user, ok := s.connectionUser(w, r, named)
	if !ok {
		return
	}
	if err := s.Connections.Disconnect(r.Context(), user, r.PathValue("provider")); err != nil {
		s.connectionError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// connectionUser is the user a connection route acts for: the named one
// (required of the administrator and the service), or the per-user
// token's own.
func (s *Server) connectionUser(w http.ResponseWriter, r *http.Request, named int64) (int64, bool) {
	user, err := principalFrom(r.Context()).userFor(named)
	if err != nil {
		writeError(w, http.StatusForbidden, "forbidden", err.Error(), nil)
		return 0, false
	}
	if user <= 0 {
		writeError(w, http.StatusBadRequest, "malformed_request", "user_id: required (a positive integer): the user whose connection this is", nil)
		return 0, false
	}
	return user, true
}

func queryUserID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	v := r.URL.Query().Get("user_id")
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("user_id: %q is not a positive integer", v), nil)
		return 0, false
	}
	return n, true
}

func (s *Server) connectionError(w http.ResponseWriter, r *http.Request, err error) {
	var invalid *connections.InvalidProviderError
	switch {
	case errors.As(err, &invalid):
		writeError(w, http.StatusBadRequest, "invalid_provider", err.Error(), map[string]any{"errors": invalid.Errors})
	case errors.Is(err, connections.ErrNoBrowserURL):
		writeError(w, http.StatusServiceUnavailable, "connections_not_configured", err.Error(), nil)
	case errors.Is(err, connections.ErrNoProvider), errors.Is(err, connections.ErrNotConnected):
		writeError(w, http.StatusNotFound, "not_found", err.Error(), nil)
	case errors.Is(err, connections.ErrProviderDisabled):
		writeError(w, http.StatusConflict, "provider_disabled", err.Error(), nil)
	case errors.Is(err, connections.ErrTooManyFlows):
		writeError(w, http.StatusTooManyRequests, "too_many_flows", err.Error(), nil)
	case errors.Is(err, connections.ErrInvalidRequest):
		writeError(w, http.StatusBadRequest, "malformed_request", err.Error(), nil)
	default:
		s.credentialError(w, r, err)
	}
}
