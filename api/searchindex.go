package api

import (
	"context"

	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
)

// catalogSearcher searches the catalog's shared index (semantic ranking
// included when on, searches counted): what the LLM loop and /mcp search
// when their tools are the enabled catalog.
type catalogSearcher struct{ s *Server }

func (c catalogSearcher) Search(query string, limit int) []toolsearch.Result {
	rs, err := c.s.SearchTools(context.Background(), query, limit)
	if err != nil {
		c.s.Logger.Warn("tool search failed", "err", err)
		return nil
	}
	return rs
}

// Rank ranks the first n matches of query, every one when n is 0, as
// Search does: what /mcp's search_tools filters to a user's tools
// before it takes a page, so that the page is full.
func (c catalogSearcher) Rank(query string, n int) ([]toolsearch.Result, int) {
	rs, total, err := c.s.searchPage(context.Background(), query, 0, n)
	if err != nil {
		c.s.Logger.Warn("tool search failed", "err", err)
		return nil, 0
	}
	return rs, total
}

// Languages are those of the catalog's tools (toolset.Languages).
func (c catalogSearcher) Languages() []string {
	ix, err := c.s.ToolIndex(context.Background())
	if err != nil {
		return nil
	}
	return ix.Languages()
}

// mcpIndex is /mcp's index: its tools are the enabled catalog.
func (s *Server) mcpIndex([]*plugins.Plugin) (toolset.Searcher, error) {
	return catalogSearcher{s}, nil
}

// runIndex is the loop's index over a run's tools: the catalog's when the
// run is bound to the whole enabled catalog (the same plugins, so no
// index is built per run), else one of its own.
func (s *Server) runIndex(ps []*plugins.Plugin) (toolset.Searcher, error) {
	if s.Catalog != nil {
		enabled, err := s.Catalog.EnabledPlugins(context.Background())
		if err == nil && len(enabled) == len(ps) {
			same := make(map[*plugins.Plugin]bool, len(enabled))
			for _, p := range enabled {
				same[p] = true
			}
			all := true
			for _, p := range ps {
				all = all && same[p]
			}
			if all {
				return catalogSearcher{s}, nil
			}
		}
	}
	return toolsearch.New(ps)
}
