package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine/toolset"
)

// A session is told its tools changed only when the tools it would list
// changed: a change of a tool hidden from its user tells it nothing. What
// a view — the sessions of one user, token perms and agent — may list is
// derived once per tool set (catalog version) and shared by the view's
// sessions: the digest of its tools, and the languages search_tools names.

// digest is a view's tools' digest.
type digest = [sha256.Size]byte

// view is what the sessions of one subject are shown of one tool set,
// on one read of its user's permission strings.
type view struct {
	read uint64 // Access.Read's

	digest digest   // of the tools it may list, as listed
	langs  []string // of the tools it may use, when searching
	// searchTool is search_tools, naming those languages.
	searchTool *sdk.Tool
}

// views are a tool set's views, by access.Subject.Key.
type views struct {
	mu sync.Mutex
	m  map[string]*view
	// sums are each tool's digest as listed, made on the first view.
	sumsOnce sync.Once
	sums     map[string]digest
}

// maxViews bounds the views a tool set keeps: past it they are made
// again as asked (a view costs one access decision over the catalog).
const maxViews = 4096

// view is the session's view of set: kept per subject while its user's
// permission strings are those it was made on (a role changed in RuoYi is
// seen when its TTL ends, as by a call, not at the next catalog change).
func (ss *session) view(ctx context.Context, set *toolSet) (*view, error) {
	vs, key := &set.views, ss.viewKey()
	read, keep := ss.read(ctx)
	vs.mu.Lock()
	v := vs.m[key]
	vs.mu.Unlock()
	if v != nil && keep && v.read == read {
		return v, nil
	}
	usable, err := ss.usable(ctx, set)
	if err != nil {
		return nil, err
	}
	v = &view{read: read, langs: set.langs, searchTool: set.searchTool}
	if set.search && usable != nil {
		if v.langs, err = toolset.LanguagesWithin(set.index, ss.usableFilter(ctx)); err != nil {
			return nil, err
		}
		v.searchTool = searchTool(v.langs)
	}
	vs.sumsOnce.Do(func() {
		vs.sums = make(map[string]digest, len(set.all))
		for _, t := range set.all {
			b, _ := json.Marshal(t) // a tool made of JSON values always marshals
			vs.sums[t.Name] = sha256.Sum256(b)
		}
	})
	h := sha256.New()
	if set.search {
		h.Write([]byte(v.searchTool.Description))
	}
	for _, t := range set.all {
		if usable == nil || usable[t.Name] {
			sum := vs.sums[t.Name]
			h.Write(sum[:])
		}
	}
	h.Sum(v.digest[:0])
	if !keep {
		return v, nil
	}
	vs.mu.Lock()
	if len(vs.m) >= maxViews || vs.m == nil {
		vs.m = make(map[string]*view)
	}
	vs.m[key] = v
	vs.mu.Unlock()
	return v, nil
}

// shown records that the session was shown v's tools (a tools/list, its
// first request, a notification), and reports whether they differ from
// those it was shown last.
func (ss *session) shown(v *view) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	changed := !ss.seen || ss.told != v.digest
	ss.seen, ss.told = true, v.digest
	return changed
}

// changed reports whether the tools the session would list from set
// differ from those it was shown last: true when that cannot be told.
func (ss *session) changed(ctx context.Context, set *toolSet) bool {
	v, err := ss.view(ctx, set)
	if err != nil {
		ss.svc.log.WarnContext(ctx, "MCP session's tools not compared; it is told they changed", "err", err)
		return true
	}
	return ss.shown(v)
}

// viewKey is the session's view: every session's the same when no access
// rule applies.
func (ss *session) viewKey() string {
	if ss.svc.opts.Access == nil {
		return ""
	}
	return ss.subject().Key()
}

// read is which read of the session's user's strings a view is made on
// now (Access.Read); keep false: a view may not be kept.
func (ss *session) read(ctx context.Context) (read uint64, keep bool) {
	if ss.svc.opts.Access == nil {
		return 0, true
	}
	return ss.svc.opts.Access.Read(ctx, ss.user)
}

// remember takes the tools the session is shown at its first request as
// those it knows, so that a change of others tells it nothing.
func (ss *session) remember(ctx context.Context) {
	set, err := ss.svc.current(ctx)
	if err != nil {
		return // told of the next change, as it cannot be compared
	}
	if v, err := ss.view(ctx, set); err == nil {
		ss.shown(v)
	}
}
