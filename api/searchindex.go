package api

import (
	"context"
	"slices"

	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
)

// catalogSearcher searches the catalog's shared index (semantic ranking
// included when on, searches counted): what the LLM loop and /mcp search
// when their tools are the enabled catalog, or some of it (within: a
// run's tools, narrowed to its user's).
type catalogSearcher struct {
	s      *Server
	within *toolsearch.Filter // nil: the whole catalog
}

func (c catalogSearcher) Search(query string, limit int) []toolsearch.Result {
	rs, _, err := c.RankUsable(query, limit, nil)
	if err != nil {
		c.s.Logger.Warn("tool search failed", "err", err)
		return nil
	}
	return rs
}

// RankUsable ranks the first n matches of query that usable keeps
// (every one when n is 0): what /mcp's search_tools asks for a user's
// tools (toolset.Within), so that the page is full.
func (c catalogSearcher) RankUsable(query string, n int, usable *toolsearch.Filter) ([]toolsearch.Result, int, error) {
	return c.s.searchPage(context.Background(), query, 0, n, c.narrow(usable))
}

// narrow is usable within the searcher's tools (nil: them all).
func (c catalogSearcher) narrow(usable *toolsearch.Filter) *toolsearch.Filter {
	within := c.within
	switch {
	case usable == nil:
		return within
	case within == nil:
		return usable
	}
	return &toolsearch.Filter{Keep: func(ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
		ps, err := within.Keep(ps)
		if err != nil {
			return nil, err
		}
		return usable.Keep(ps)
	}}
}

// Languages are those of the searcher's tools (toolset.Languages): a
// run's, not the whole catalog's.
func (c catalogSearcher) Languages() []string {
	langs, err := c.LanguagesWithin(nil)
	if err != nil {
		c.s.Logger.Warn("tool search: the languages of the tools could not be told", "err", err)
	}
	return langs
}

// LanguagesWithin are the languages of those of the searcher's tools
// usable keeps (toolset.LanguagesWithin).
func (c catalogSearcher) LanguagesWithin(usable *toolsearch.Filter) ([]string, error) {
	ix, err := c.s.ToolIndex(context.Background())
	if err != nil {
		return nil, err
	}
	return ix.LanguagesWithin(c.narrow(usable))
}

// mcpIndex is /mcp's index: its tools are the enabled catalog.
func (s *Server) mcpIndex([]*plugins.Plugin) (toolset.Searcher, error) {
	return catalogSearcher{s: s}, nil
}

// runIndex is the loop's index over a run's tools: the catalog's when
// they are enabled catalog plugins (the whole catalog, or the part its
// user may use, or its agent holds: searched within them, so that no
// index is built per run), else one of its own.
func (s *Server) runIndex(ps []*plugins.Plugin) (toolset.Searcher, error) {
	if s.Catalog != nil {
		enabled, err := s.Catalog.EnabledPlugins(context.Background())
		if err == nil && len(ps) <= len(enabled) {
			in := make(map[*plugins.Plugin]bool, len(ps))
			for _, p := range ps {
				in[p] = true
			}
			n := 0
			for _, p := range enabled {
				if in[p] {
					n++
				}
			}
			switch {
			case n == len(enabled):
				return catalogSearcher{s: s}, nil
			case n == len(in):
				return catalogSearcher{s: s, within: &toolsearch.Filter{Keep: func(ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
					return slices.DeleteFunc(slices.Clone(ps), func(p *plugins.Plugin) bool { return !in[p] }), nil
				}}}, nil
			}
		}
	}
	return toolsearch.New(ps)
}
