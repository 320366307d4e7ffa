// Package toolsearch finds the few tools of a large catalog that fit a
// request in people's words (seed 004's action recall): an in-memory index
// over every enabled plugin, queried without I/O, swapped whole when the
// catalog changes.
package toolsearch

import (
	"context"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/blindexec/blindexec/plugins"
)

// Result is one matching tool, best first in a Search answer.
type Result struct {
	Name   string
	Title  string
	Score  float64
	Plugin *plugins.Plugin
}

// Index is an immutable search index over one catalog snapshot; Search is
// safe for concurrent use.
type Index struct {
	plugins []*plugins.Plugin
}

// New indexes the enabled plugins of ps. The plugins are shared, not
// copied: callers must not modify them afterwards.
func New(ps []*plugins.Plugin) (*Index, error) {
	ix := &Index{}
	for _, p := range ps {
		if p != nil && p.Enabled() {
			ix.plugins = append(ix.plugins, p)
		}
	}
	return ix, nil
}

// Len is the number of indexed tools.
func (ix *Index) Len() int { return len(ix.plugins) }

// Search returns at most limit tools matching query, best first. A limit
// of zero or less means DefaultLimit.
func (ix *Index) Search(query string, limit int) []Result {
	if limit <= 0 {
		limit = DefaultLimit
	}
	words := strings.Fields(strings.ToLower(query))
	var out []Result
	for _, p := range ix.plugins {
		text := strings.ToLower(p.Name + " " + p.Title + " " + p.Description)
		score := 0.0
		for _, w := range words {
			if strings.Contains(text, w) {
				score++
			}
		}
		if score > 0 {
			out = append(out, Result{Name: p.Name, Title: p.Title, Score: score, Plugin: p})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// DefaultLimit is the number of results when the caller gives none.
const DefaultLimit = 5

// Live holds the current index of a changing catalog: readers take
// Current without locks; Rebuild builds a new index aside and swaps it in.
type Live struct {
	cur atomic.Pointer[Index]
}

// Current is the index in force (an empty one before the first Rebuild).
func (l *Live) Current() *Index {
	if ix := l.cur.Load(); ix != nil {
		return ix
	}
	return empty
}

var empty = &Index{}

// Rebuild indexes ps and makes it current. The context bounds the build
// (a large catalog takes a noticeable fraction of a second).
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
