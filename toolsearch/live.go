package toolsearch

import (
	"context"
	"sync/atomic"

	"github.com/blindexec/blindexec/plugins"
)

// Live holds the current index of a changing catalog: readers take Current
// (or Search) without locks; Rebuild builds a new index aside and swaps it
// in, so a search never sees a half-built index. The zero Live is an empty
// catalog.
type Live struct {
	cur atomic.Pointer[Index]
	// Metrics, when set, counts searches made through Live.Search.
	Metrics *Metrics
}

var empty, _ = New(nil)

// Current is the index in force.
func (l *Live) Current() *Index {
	if ix := l.cur.Load(); ix != nil {
		return ix
	}
	return empty
}

// Rebuild indexes ps and makes it current. Building GitHub's 1,200 tools
// takes a noticeable fraction of a second: callers rebuild off the request
// path when they can.
func (l *Live) Rebuild(ctx context.Context, ps []*plugins.Plugin) error {
	ix, err := New(ps)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	l.cur.Store(ix)
	return nil
}

// Search searches the current index and counts the search.
func (l *Live) Search(query string, limit int) []Result {
	rs := l.Current().Search(query, limit)
	l.Metrics.observe(len(rs))
	return rs
}
