package toolsearch

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/blindexec/blindexec/plugins"
)

// Live holds the current index of a changing catalog: readers take Current
// (or Search) without locks; a rebuild builds a new index aside and swaps
// it in, so a search never sees a half-built index. The zero Live is an
// empty catalog.
type Live struct {
	mu  sync.Mutex // serializes builds
	cur atomic.Pointer[versioned]
	// Metrics, when set, counts searches made through Live.Search.
	Metrics *Metrics
	// Expansion, when set, is indexed with the tools (Parts.Expansion):
	// after its Update, Rebuild.
	Expansion *Expansion
}

// versioned is an index and the catalog version it was built from.
type versioned struct {
	ix      *Index
	version int64
}

var empty, _ = New(nil)

// Current is the index in force.
func (l *Live) Current() *Index {
	if v := l.cur.Load(); v != nil {
		return v.ix
	}
	return empty
}

// Version is the catalog version of the index in force (0: none built).
func (l *Live) Version() int64 {
	if v := l.cur.Load(); v != nil {
		return v.version
	}
	return 0
}

// Rebuild indexes ps and makes it current, whatever the version held.
func (l *Live) Rebuild(ctx context.Context, ps []*plugins.Plugin) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.build(ctx, ps, l.Version())
}

// At returns the index of catalog version, building it from ps unless the
// index in force is of that version already (or being built by another
// caller, which it then waits for). Building GitHub's 1,200 tools takes a
// few hundred milliseconds: callers build ahead of searches when they can.
func (l *Live) At(ctx context.Context, version int64, ps []*plugins.Plugin) (*Index, error) {
	if v := l.cur.Load(); v != nil && v.version == version {
		return v.ix, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if v := l.cur.Load(); v != nil && v.version == version {
		return v.ix, nil
	}
	if err := l.build(ctx, ps, version); err != nil {
		return nil, err
	}
	return l.Current(), nil
}

func (l *Live) build(ctx context.Context, ps []*plugins.Plugin, version int64) error {
	parts := AllParts
	parts.Expansion = l.Expansion
	ix, err := NewWith(ps, parts)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	l.cur.Store(&versioned{ix, version})
	return nil
}

// Search searches the current index and counts the search.
func (l *Live) Search(query string, limit int) []Result {
	rs := l.Current().Search(query, limit)
	l.Metrics.Observe(len(rs))
	return rs
}
