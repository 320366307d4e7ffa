package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/plugins"
)

// ToolAccess narrows a list of tools to those a user may use
// (*access.Checker).
type ToolAccess interface {
	Usable(ctx context.Context, sub access.Subject, ps []*plugins.Plugin) ([]*plugins.Plugin, error)
}

// usable is ps as the request's caller may list them: a per-user
// caller's, those its user may use; the service and the administrator,
// who are no user, see the catalog (a run they start for a user offers
// that user's tools only).
func (s *Server) usable(ctx context.Context, ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
	p := principalFrom(ctx)
	if s.Access == nil || p.role >= roleService {
		return ps, nil
	}
	return s.Access.Usable(ctx, access.Subject{User: p.userID, Narrow: narrowing(ctx, nil)}, ps)
}

// filtersTools reports whether the request's lists are narrowed to its
// user's tools.
func (s *Server) filtersTools(ctx context.Context) bool {
	return s.Access != nil && principalFrom(ctx).role < roleService
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
	case u.ID != named:
		field, msg = "user.id", "must equal user_id"
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
	var narrow []access.Held
	if perms := principalFrom(ctx).perms; perms != nil {
		narrow = append(narrow, access.HeldOf(perms...))
	}
	if u != nil {
		narrow = append(narrow, access.HeldOf(u.Permissions...))
	}
	return narrow
}
