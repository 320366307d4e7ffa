package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/store"
)

func (s *Server) accessRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/tools/{name}/access", s.with(roleService, s.toolAccess))
}

// checker is the rule the server applies, nil when it applies none (every
// user may use every tool).
func (s *Server) checker() *access.Checker {
	c, _ := s.Access.(*access.Checker)
	return c
}

// toolAccess is GET /v1/tools/{name}/access[?user_id=]: who may use a
// tool — the permissions it needs, and with RuoYi's tables the roles whose
// menus grant them — and, for a user, the rule's decision step by step
// (access.Checker.Explain: the decision the executor takes, said in
// words). The service's and the administrator's: a per-user caller sees
// its own tools only.
func (s *Server) toolAccess(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	p, err := s.Catalog.Plugin(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "plugin_not_found", fmt.Sprintf("no plugin named %q", name), map[string]string{"name": name})
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	c := s.checker()
	out := map[string]any{"tool": p.Name, "enabled": p.Enabled(), "perms": slices.Clone(p.Perms)}
	if p.Perms == nil {
		out["perms"] = []string{}
	}
	if c == nil {
		out["mode"], out["source"] = access.ModeOpen, "unchecked"
	} else {
		ex := c.Explain(r.Context(), access.Subject{}, p)
		out["mode"], out["source"] = ex.Mode, ex.Source
		if c.Directory != nil && len(p.Perms) > 0 {
			roles, err := c.Directory.RolesGranting(r.Context(), p.Perms)
			if err != nil {
				writeError(w, http.StatusServiceUnavailable, access.CodeUnavailable, (&access.UnavailableError{Source: c.Name, Err: err}).Error(), nil)
				return
			}
			out["roles"] = append([]access.Role{}, roles...)
		}
	}
	v := r.URL.Query().Get("user_id")
	if v == "" {
		writeJSON(w, http.StatusOK, out)
		return
	}
	user, err := strconv.ParseInt(v, 10, 64)
	if err != nil || user < 0 {
		writeError(w, http.StatusBadRequest, "malformed_request", "user_id: expected a user id (0 or more)", map[string]string{"field": "user_id"})
		return
	}
	out["user_id"] = user
	if name := s.userNames(r.Context(), []int64{user})[user]; name != "" {
		out["user_name"] = name
	}
	var ex access.Explanation
	switch {
	case c == nil:
		ex = access.Explanation{Allowed: true, Needs: out["perms"].([]string), Mode: access.ModeOpen, Source: "unchecked",
			Steps: []access.Step{{Reason: access.ReasonUnchecked, Grants: true, Message: "this engine applies no access rule: every user may use every tool"}}}
	default:
		// The service and the administrator acting for the user get the
		// user's permissions (a payload may narrow them per call, which
		// a question asked here does not carry).
		ex = c.Explain(r.Context(), access.Subject{User: user}, p)
	}
	if !p.Enabled() {
		ex.Allowed = false
		ex.Steps = append(ex.Steps, access.Step{Reason: access.ReasonDisabled, Message: fmt.Sprintf("plugin %q is disabled: no one may use it", p.Name)})
	}
	out["decision"] = ex
	writeJSON(w, http.StatusOK, out)
}

// userNames are the names of ids in RuoYi's tables when the engine reads
// them (BLINDEXEC_PERMISSIONS=ruoyi), else none: a name is for people to
// read, so a failed read is logged and leaves the names out.
func (s *Server) userNames(ctx context.Context, ids []int64) map[int64]string {
	c := s.checker()
	if c == nil || c.Directory == nil || len(ids) == 0 {
		return nil
	}
	names, err := c.Directory.UserNames(ctx, ids)
	if err != nil {
		s.Logger.WarnContext(ctx, "users' names not read; shown by id", "err", err)
		return nil
	}
	return names
}
