package api

import (
	"context"
	"net/http"

	"github.com/blindexec/blindexec/access"
)

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
