package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// Credentials are write-only over HTTP: values go in, only masked forms
// come out.

func (s *Server) credentialUser(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, ok := pathUserID(w, r)
	if !ok {
		return 0, false
	}
	if !principalFrom(r.Context()).actsFor(id) {
		writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("user_id: this token may not manage the credentials of user %d", id), nil)
		return 0, false
	}
	return id, true
}

func (s *Server) listCredentials(w http.ResponseWriter, r *http.Request) {
	id, ok := s.credentialUser(w, r)
	if !ok {
		return
	}
	list, err := s.Creds.List(r.Context(), id)
	if err != nil {
		s.credentialError(w, r, err)
		return
	}
	out := map[string]any{"user_id": id, "credentials": list}
	if principalFrom(r.Context()).browser {
		out["credentials"] = keysOnly(list)
	}
	needed, err := boolParam(r, "needed")
	if err != nil {
		writeError(w, http.StatusBadRequest, "malformed_request", err.Error(), nil)
		return
	}
	if needed {
		needed, err := s.neededKeys(r.Context(), id, list)
		if unavailable(w, err) {
			return
		}
		if err != nil {
			s.internal(w, r, err)
			return
		}
		out["needed"] = needed
	}
	writeJSON(w, http.StatusOK, out)
}

// neededKey is a credential key the user's enabled tools read: which
// tools (the first few, and how many), whether the user has it, and
// whether an empty value is one (a basic-auth password).
type neededKey struct {
	Key        string   `json:"key"`
	Tools      []string `json:"tools"`
	ToolsTotal int      `json:"tools_total"`
	Set        bool     `json:"set"`
	MayBeEmpty bool     `json:"may_be_empty,omitempty"`
}

// maxNeededTools bounds the tools named per key.
const maxNeededTools = 5

// neededKeys lists, by key, the credentials the enabled tools the user
// may use read (issue 51 point 6): the credentials page marks those the
// user lacks. A connection's tokens are no keys.
func (s *Server) neededKeys(ctx context.Context, user int64, have []auth.MaskedCredential) ([]neededKey, error) {
	ps, err := s.Catalog.EnabledPlugins(ctx)
	if err != nil {
		return nil, err
	}
	if s.Access != nil {
		sub := access.Subject{User: user}
		if principalFrom(ctx).role < roleService {
			sub.Narrow = narrowing(ctx, nil)
		}
		if ps, err = s.Access.Usable(ctx, sub, ps); err != nil {
			return nil, err
		}
	}
	set := map[string]bool{}
	for _, c := range have {
		set[c.Key] = true
	}
	byKey := map[string]*neededKey{}
	var keys []string
	for _, p := range ps {
		for _, k := range p.Credentials() {
			n := byKey[k]
			if n == nil {
				n = &neededKey{Key: k, Tools: []string{}, Set: set[k]}
				byKey[k] = n
				keys = append(keys, k)
			}
			n.MayBeEmpty = n.MayBeEmpty || p.AuthConfig.MayBeEmpty(k)
			if n.ToolsTotal++; len(n.Tools) < maxNeededTools {
				n.Tools = append(n.Tools, p.Name)
			}
		}
	}
	slices.Sort(keys)
	out := make([]neededKey, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out, nil
}

// putCredential stores a value: {"value": "..."} as JSON, or the raw body
// when the content type is text/plain.
func (s *Server) putCredential(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	id, ok := s.credentialUser(w, r)
	if !ok {
		return
	}
	if err := auth.ValidateCredentialKey(r.PathValue("key")); err != nil {
		writeError(w, http.StatusBadRequest, "malformed_request", "key: "+err.Error(), nil)
		return
	}
	var value string
	if ct := r.Header.Get("Content-Type"); len(ct) >= 10 && ct[:10] == "text/plain" {
		b, ok := readBody(w, r, 64<<10)
		if !ok {
			return
		}
		value = string(b)
	} else {
		var req struct {
			Value *string `json:"value"`
		}
		if !decodeBody(w, r, &req) {
			return
		}
		if req.Value == nil {
			writeError(w, http.StatusBadRequest, "malformed_request", "value: required (the credential's plaintext)", nil)
			return
		}
		value = *req.Value
	}
	by := principalFrom(r.Context()).role.String()
	if err := s.Creds.Set(r.Context(), id, r.PathValue("key"), value, by); err != nil {
		s.credentialError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deleteCredential(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	id, ok := s.credentialUser(w, r)
	if !ok {
		return
	}
	err := s.Creds.Delete(r.Context(), id, r.PathValue("key"))
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "credential_not_found", fmt.Sprintf("user %d has no credential %q", id, r.PathValue("key")), nil)
		return
	}
	if err != nil {
		s.credentialError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) rotateCredentials(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	n, err := s.Creds.Rotate(r.Context())
	if err != nil {
		s.credentialError(w, r, err)
		return
	}
	if s.Connections != nil {
		// Provider secrets and connection tokens are in the vault's
		// format too: one rotation re-encrypts them all.
		m, err := s.Connections.Rotate(r.Context())
		if err != nil {
			s.credentialError(w, r, err)
			return
		}
		n += m
	}
	m, err := importer.RotateURLs(r.Context(), s.Store, s.Creds.Keyring())
	if err != nil {
		s.credentialError(w, r, err)
		return
	}
	n += m
	writeJSON(w, http.StatusOK, map[string]int{"rotated": n})
}

func (s *Server) credentialError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, auth.ErrNoMasterKey):
		writeError(w, http.StatusServiceUnavailable, "no_master_key", err.Error(), nil)
	case errors.Is(err, auth.ErrSecretTooShort):
		writeError(w, http.StatusUnprocessableEntity, "secret_too_short", err.Error(), nil)
	case errors.Is(err, auth.ErrEmptyValue):
		// Empty is a value only for a basic-auth password (Stripe's).
		writeError(w, http.StatusBadRequest, "malformed_request", "value: "+auth.ErrEmptyValue.Error(), nil)
	default:
		s.internal(w, r, err)
	}
}

// Tokens: per-user bearer tokens, stored hashed and shown once.

// maxTokenName bounds a token's name: its column's size.
const maxTokenName = 128

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	var req struct {
		UserID    UserID `json:"user_id"`
		Name      string `json:"name"`
		ExpiresIn int64  `json:"expires_in_seconds"`
		// ConsoleOnly issues a token that signs in to the console only.
		ConsoleOnly bool `json:"console_only"`
		// Perms are the token's fixed permission strings, which narrow
		// what its user may use (issue 46).
		Perms []string `json:"perms"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if req.UserID <= 0 {
		writeError(w, http.StatusBadRequest, "malformed_request", "user_id: required, a positive integer", nil)
		return
	}
	if n := utf8.RuneCountInString(req.Name); n > maxTokenName {
		writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("name: %d characters, over the limit of %d", n, maxTokenName),
			map[string]any{"limit": "name characters", "max": maxTokenName})
		return
	}
	if req.ExpiresIn > maxTokenLifetime {
		// Past it the lifetime overflows a time.Duration: a wrapped value
		// was a token that never expired, or one that had already.
		writeError(w, http.StatusBadRequest, "invalid_payload", fmt.Sprintf("expires_in_seconds: %d is over the limit of %d (0: the token never expires)", req.ExpiresIn, maxTokenLifetime),
			map[string]string{"field": "expires_in_seconds"})
		return
	}
	if req.Perms != nil && len(req.Perms) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_payload", "perms: give at least one permission string, or leave perms out", map[string]string{"field": "perms"})
		return
	}
	if errs := plugins.CheckPerms("perms", req.Perms); len(errs) > 0 {
		writeError(w, http.StatusBadRequest, "invalid_payload", errs[0].Field+": "+errs[0].Message, map[string]any{"fields": errs})
		return
	}
	scope := ""
	if req.ConsoleOnly {
		scope = store.TokenScopeConsole
	}
	tok, row, err := IssueToken(r.Context(), s.Store, int64(req.UserID), req.Name, time.Duration(req.ExpiresIn)*time.Second, scope, req.Perms...)
	if errors.Is(err, ErrTokenLifetime) {
		writeError(w, http.StatusBadRequest, "invalid_payload", fmt.Sprintf("expires_in_seconds: %d: %v", req.ExpiresIn, err), map[string]string{"field": "expires_in_seconds"})
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "token_id": row.ID, "user_id": row.UserID, "name": row.Name, "perms": req.Perms})
}

// maxTokenLifetime is the longest lifetime POST /v1/tokens takes, in
// seconds: what a time.Duration holds (292 years).
const maxTokenLifetime = int64(math.MaxInt64 / time.Second)

// ErrTokenLifetime refuses a negative lifetime: it was taken for none, so
// a token meant to have expired never did.
var ErrTokenLifetime = errors.New("a token's lifetime is 0 (it never expires) or more")

// IssueToken creates a per-user token of scope ("" or
// store.TokenScopeConsole) with fixed perms (checked by the caller), which
// narrow what its user may use; the plaintext is returned once. A ttl
// below 0 is ErrTokenLifetime.
func IssueToken(ctx context.Context, st *store.Store, userID int64, name string, ttl time.Duration, scope string, perms ...string) (string, *store.Token, error) {
	if ttl < 0 {
		return "", nil, ErrTokenLifetime
	}
	tok, hash := auth.NewToken()
	row := &store.Token{UserID: userID, Name: name, Hash: hash, Prefix: tok[:8], Scope: scope, Perms: plugins.JoinPerms(perms), Audit: store.Audit{CreateBy: "admin"}}
	if ttl > 0 {
		exp := time.Now().Add(ttl).UTC()
		row.ExpireTime = &exp
	}
	if err := st.CreateToken(ctx, row); err != nil {
		return "", nil, fmt.Errorf("create token: %w", err)
	}
	return tok, row, nil
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	var uid *int64
	if v := r.URL.Query().Get("user_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("user_id: %q is not an integer", v), nil)
			return
		}
		uid = &id
	}
	list, err := s.Store.ListTokens(r.Context(), uid)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": list})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("id: %q is not an integer", r.PathValue("id")), nil)
		return
	}
	err = s.Store.DeleteToken(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "token_not_found", fmt.Sprintf("no token %d", id), nil)
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
