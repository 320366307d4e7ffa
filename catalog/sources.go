package catalog

import (
	"context"
	"encoding/json"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// sourceLister is a Source that also lists the import sources
// (*store.Store): the catalog then tells tool search where each plugin
// came from (issue 49).
type sourceLister interface {
	ListImportSources(ctx context.Context) ([]store.SourceSummary, error)
}

// searchSources are the import sources as tool search reads them, by id;
// nil when the catalog's Source lists none. A source that cannot be read
// only leaves search without it: the catalog still loads.
func (c *Catalog) searchSources(ctx context.Context) map[int64]*plugins.Source {
	l, ok := c.src.(sourceLister)
	if !ok {
		return nil
	}
	rows, err := l.ListImportSources(ctx)
	if err != nil {
		c.logger.WarnContext(ctx, "import sources left out of tool search", "err", err)
		return nil
	}
	out := make(map[int64]*plugins.Source, len(rows))
	for _, r := range rows {
		out[r.ID] = searchSource(&r)
	}
	return out
}

// searchSource is what tool search reads of an import source: its name
// (the MCP server's, else the import's prefix), the title and tag
// descriptions its last sync found, and the aliases an administrator gave
// it. Columns that do not decode are left out.
func searchSource(r *store.SourceSummary) *plugins.Source {
	s := &plugins.Source{Name: r.Prefix}
	if r.ServerName != "" {
		s.Name = r.ServerName
	}
	if r.Title != nil {
		s.Title = *r.Title
	}
	if r.TagDescriptions != nil {
		_ = json.Unmarshal([]byte(*r.TagDescriptions), &s.TagDescriptions)
	}
	if r.Aliases != nil {
		_ = json.Unmarshal([]byte(*r.Aliases), &s.Aliases)
	}
	return s
}
