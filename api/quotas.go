package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/quota"
	"github.com/blindexec/blindexec/store"
)

// quotaRoutes serves the quota rules (the administrator's) and a user's
// use of them.
func (s *Server) quotaRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/quotas/rules", s.with(roleService, s.listQuotaRules))
	mux.HandleFunc("POST /v1/quotas/rules", s.with(roleAdmin, s.createQuotaRule))
	mux.HandleFunc("DELETE /v1/quotas/rules/{name}", s.with(roleAdmin, s.deleteQuotaRule))
	mux.HandleFunc("GET /v1/quotas", s.with(roleUser, s.quotaUse))
}

func (s *Server) listQuotaRules(w http.ResponseWriter, r *http.Request) {
	rules, err := s.Quota.Rules(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"rules": rules, "time_zone": s.Quota.Location().String()})
}

func (s *Server) createQuotaRule(w http.ResponseWriter, r *http.Request) {
	var rule quota.Rule
	if !decodeBody(w, r, &rule) {
		return
	}
	rule.ID = 0
	if err := rule.Validate(); err != nil {
		var fe *quota.FieldError
		errors.As(err, &fe)
		writeError(w, http.StatusBadRequest, "invalid_rule", err.Error(), map[string]any{"field": fe.Field})
		return
	}
	defer s.changed(r.Context())
	row := rule.Row()
	err := s.Store.CreateQuotaRule(r.Context(), row)
	if errors.Is(err, store.ErrDuplicate) {
		writeError(w, http.StatusConflict, "rule_exists", fmt.Sprintf("a quota rule named %q exists: delete it first", rule.Name), map[string]any{"field": "name"})
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	rule.ID = row.ID
	writeJSON(w, http.StatusCreated, rule)
}

func (s *Server) deleteQuotaRule(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	name := r.PathValue("name")
	err := s.Store.DeleteQuotaRule(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "rule_not_found", fmt.Sprintf("no quota rule %q", name), nil)
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// quotaUse answers GET /v1/quotas?user_id=N: each rule that applies to the
// user, its use in the current window and when it resets. A per-user
// token sees its own user's.
func (s *Server) quotaUse(w http.ResponseWriter, r *http.Request) {
	var named int64
	if v := r.URL.Query().Get("user_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("user_id: %q is not a user id (a non-negative integer)", v), nil)
			return
		}
		named = n
	}
	user, ok := actingUser(w, r, UserID(named))
	if !ok {
		return
	}
	use, err := s.Quota.UseOf(r.Context(), user)
	if err == nil && s.Access != nil && principalFrom(r.Context()).role < roleService {
		use, err = s.ownQuotas(r.Context(), use)
	}
	if err != nil {
		if !unavailable(w, err) {
			s.internal(w, r, err)
		}
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"user_id": user, "time_zone": s.Quota.Location().String(), "quotas": use})
}

// newQuota is the keeper of a server built without one (tests): windows
// in UTC, rules following Changes.
func (s *Server) newQuota() *quota.Keeper {
	k := quota.New(s.Store, s.Changes, s.Catalog, time.UTC, s.Logger)
	if s.Registry != nil {
		if err := k.Register(s.Registry); err != nil {
			s.Logger.Warn("quota metrics not registered", "err", err)
		}
	}
	return k
}

// refusedStatus is the HTTP status of a call refused for one of the
// engine's limits, and the Retry-After it advises; ok false for other
// refusals.
func refusedStatus(refused *engine.RefusedError) (status int, retryAfter time.Duration, ok bool) {
	d, _ := refused.Details.(map[string]any)
	secs, _ := d["retry_after_s"].(float64)
	retryAfter = time.Duration(secs * float64(time.Second))
	switch refused.Code {
	case engine.CodeRateLimited, engine.CodeQuotaExceeded:
		return http.StatusTooManyRequests, retryAfter, true
	case engine.CodeQuotaUnavailable, engine.CodePermissionsUnavailable:
		return http.StatusServiceUnavailable, retryAfter, true
	}
	return 0, 0, false
}

// ownQuotas narrows a per-user caller's quotas to what its user may be
// told: a rule's plugin names and tags those of the enabled tools the
// user may use (the list rule, s.usable), a rule of none of them left
// out — its names would be of tools hidden from the user.
func (s *Server) ownQuotas(ctx context.Context, use []quota.Use) ([]quota.Use, error) {
	enabled, err := s.Catalog.EnabledPlugins(ctx)
	if err != nil {
		return nil, err
	}
	mine, err := s.usable(ctx, "", enabled)
	if err != nil {
		return nil, err
	}
	var names, tags []string
	for _, p := range mine {
		names = append(names, p.Name)
		tags = append(tags, p.Tags...)
	}
	kept := use[:0]
	for _, u := range use {
		if u.Narrow(names, tags) {
			kept = append(kept, u)
		}
	}
	return kept, nil
}
