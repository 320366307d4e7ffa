package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
)

// ToolAccess narrows a list of tools to those a user may use, within an
// agent (*access.Checker).
type ToolAccess interface {
	Usable(ctx context.Context, sub access.Subject, ps []*plugins.Plugin) ([]*plugins.Plugin, error)
	// UsableSet is Usable over a catalog generation's list, as the set
	// of positions, kept per subject.
	UsableSet(ctx context.Context, sub access.Subject, all []*plugins.Plugin) (*access.Set, error)
	// Within is the agent's tools among ps, for a caller who is no user.
	Within(ctx context.Context, agent string, ps []*plugins.Plugin) ([]*plugins.Plugin, error)
	// UseAgent returns the agent sub names when sub may use it.
	UseAgent(ctx context.Context, sub access.Subject) (*catalog.Agent, error)
	// Read tells which read of user's strings a list is decided on now
	// (what /mcp keeps a view against).
	Read(ctx context.Context, user int64) (read uint64, ok bool)
}

// usable is ps as the request's caller may list them, within agent when
// it names one: a per-user caller's, those its user may use; the service
// and the administrator, who are no user, see the catalog, or the
// agent's part of it (a run they start for a user offers that user's
// tools only). An agent named where no rule is kept is refused.
func (s *Server) usable(ctx context.Context, agent string, ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
	p := principalFrom(ctx)
	switch {
	case s.Access == nil && agent != "":
		return nil, &access.UnavailableError{Source: "agents", Err: access.ErrNoAgents}
	case s.Access == nil:
		return ps, nil
	case p.role >= roleService:
		return s.Access.Within(ctx, agent, ps)
	}
	return s.Access.Usable(ctx, s.subject(ctx, p.userID, agent), ps)
}

// subject is whom a request acts for: user, with the request's token's
// fixed perms, within agent.
func (s *Server) subject(ctx context.Context, user int64, agent string) access.Subject {
	return access.Subject{User: user, Narrow: narrowing(ctx, nil), Agent: agent}
}

// filtersTools reports whether the request's lists are narrowed: to its
// user's tools, or to the agent its ?agent= names.
func (s *Server) filtersTools(r *http.Request) bool {
	return agentParam(r) != "" || s.Access != nil && principalFrom(r.Context()).role < roleService
}

// agentParam is a list's ?agent=.
func agentParam(r *http.Request) string { return r.URL.Query().Get("agent") }

// refusedAgent answers a request naming an agent it may not use: 404
// agent_not_found, 409 agent_disabled, 403 permission_denied (naming
// the agent and the permissions it needs).
func refusedAgent(w http.ResponseWriter, err error) bool {
	if ae, ok := errors.AsType[*catalog.AgentError](err); ok {
		status := http.StatusNotFound
		if ae.Disabled {
			status = http.StatusConflict
		}
		writeError(w, status, ae.Code(), ae.Error(), map[string]string{"agent": ae.Name})
		return true
	}
	if d, ok := errors.AsType[*access.DeniedError](err); ok {
		details := map[string]any{"needs": d.Needs}
		if d.Agent != "" {
			details["agent"] = d.Agent
		}
		if d.Plugin != "" {
			details["plugin"] = d.Plugin
		}
		writeError(w, http.StatusForbidden, access.CodeDenied, d.Error(), details)
		return true
	}
	return false
}

// unavailable answers 503 permissions_unavailable when err says the
// user's permissions could not be read.
func unavailable(w http.ResponseWriter, err error) bool {
	u, ok := errors.AsType[*access.UnavailableError](err)
	if ok {
		writeError(w, http.StatusServiceUnavailable, access.CodeUnavailable, u.Error(), nil)
	}
	return ok
}

// PayloadUser is a service payload's "user": RuoYi's LoginUser, whose
// permissions (LoginUser.getPermissions()) narrow what the database
// source grants the user, never widen it (issue 46).
type PayloadUser struct {
	ID          UserID   `json:"id"`
	Permissions []string `json:"permissions"`
}

// payloadUserAllowed answers 400 invalid_payload, naming the field, when
// a payload's user is not its caller's to give: a per-user caller never
// names its own permissions, and the user must be the payload's user_id
// with a list of permissions.
func payloadUserAllowed(w http.ResponseWriter, r *http.Request, named UserID, u *PayloadUser) bool {
	field, msg := "", ""
	switch {
	case u == nil:
		return true
	case principalFrom(r.Context()).role < roleService:
		field, msg = "user.permissions", "a per-user token cannot name its permissions: they come from the engine's sources only"
	case u.ID != named && named == 0:
		field, msg = "user.id", fmt.Sprintf("%d, and user_id is absent: send user_id too, the same id", u.ID)
	case u.ID != named:
		field, msg = "user.id", fmt.Sprintf("%d, user_id %d: they must be the same user", u.ID, named)
	case u.Permissions == nil:
		field, msg = "user.permissions", "expected an array of permission strings (RuoYi's LoginUser.getPermissions())"
	default:
		return true
	}
	writeError(w, http.StatusBadRequest, "invalid_payload", field+": "+msg, map[string]string{"field": field})
	return false
}

// narrowing is what narrows the call's user's permissions besides the
// database source: the per-user token's fixed perms and the service
// payload's user.permissions (checked by payloadUserAllowed), each judged
// on its own.
func narrowing(ctx context.Context, u *PayloadUser) []access.Held {
	return sources(principalFrom(ctx).perms, u)
}

// calling is what a call of the request names of its user's sources
// of strings: its per-user token, whose perms the engine reads as they
// are at each decision (engine.Call.Token), and the other sources
// (engine.Call.Narrow); a caller with no token of its own (the service,
// the administrator) names none.
func calling(ctx context.Context, u *PayloadUser) (token int64, narrow []access.Held) {
	p := principalFrom(ctx)
	if p.tokenID == 0 {
		return 0, sources(p.perms, u)
	}
	return p.tokenID, sources(nil, u)
}

// sources are a token's fixed perms (nil: none) and a payload's user's
// strings, as access.Subject.Narrow lists them.
func sources(perms []string, u *PayloadUser) []access.Held {
	var narrow []access.Held
	if perms != nil {
		narrow = append(narrow, access.HeldOf(perms...))
	}
	if u != nil {
		narrow = append(narrow, access.HeldOf(u.Permissions...))
	}
	return narrow
}
