package api

import (
	"context"
	"net/http"

	"github.com/blindexec/blindexec/store"
)

// seen is what of the users' work a request's caller sees — their pending
// items, paused runs and execution records — decided here once for every
// route that lists, reads or decides them (review 68, the lead's
// decision). A per-user caller sees its own user's only; one whose token
// has fixed perms, of those only the items and records of the tools its
// perms let it use (the list rule, s.usable, over the catalog, disabled
// tools included) and the runs it started itself. The service and the
// administrator see every user's.
type seen struct {
	user int64 // a per-user caller's user; 0: every user's
	// narrowed marks a token with fixed perms: tools and token apply.
	narrowed bool
	token    int64
	tools    map[string]bool
	names    []string // tools' keys, in name order
}

// seenBy is what the request's caller sees. Only a token with fixed perms
// costs a decision over the catalog; its error is the list rule's
// (answered by seenOf).
func (s *Server) seenBy(ctx context.Context) (*seen, error) {
	p := principalFrom(ctx)
	if p.role != roleUser {
		return &seen{}, nil
	}
	sn := &seen{user: p.userID}
	if p.perms == nil {
		return sn, nil
	}
	all, err := s.Catalog.Plugins(ctx)
	if err != nil {
		return nil, err
	}
	kept, err := s.usable(ctx, "", all)
	if err != nil {
		return nil, err
	}
	sn.narrowed, sn.token = true, p.tokenID
	sn.tools, sn.names = make(map[string]bool, len(kept)), make([]string, 0, len(kept))
	for _, pl := range kept {
		sn.tools[pl.Name] = true
		sn.names = append(sn.names, pl.Name)
	}
	return sn, nil
}

// seenOf is seenBy for a handler: false when it answered the error (503
// permissions_unavailable when the user's permissions could not be read).
func (s *Server) seenOf(w http.ResponseWriter, r *http.Request) (*seen, bool) {
	sn, err := s.seenBy(r.Context())
	if err != nil {
		if !unavailable(w, err) {
			s.internal(w, r, err)
		}
		return nil, false
	}
	return sn, true
}

// ofUser reports whether user (nil: no user's) is one the caller sees.
func (sn *seen) ofUser(user *int64) bool {
	return sn.user == 0 || user != nil && *user == sn.user
}

// item reports whether the caller sees the pending item it.
func (sn *seen) item(it *store.PendingItem) bool {
	return sn.ofUser(it.UserID) && (!sn.narrowed || sn.tools[it.Tool])
}

// run reports whether the caller sees run.
func (sn *seen) run(run *store.Run) bool {
	return sn.ofUser(run.UserID) && (!sn.narrowed || run.TokenID != nil && *run.TokenID == sn.token)
}

// toolFilter is the tools a list keeps (nil: every tool).
func (sn *seen) toolFilter() []string {
	if !sn.narrowed {
		return nil
	}
	return sn.names
}

// runFilter is the token whose runs a list keeps (nil: every token's).
func (sn *seen) runFilter() *int64 {
	if !sn.narrowed {
		return nil
	}
	return &sn.token
}
