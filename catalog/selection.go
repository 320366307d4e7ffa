package catalog

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/blindexec/blindexec/plugins"
)

// Selection picks plugins by name, by tag and by the import source that
// wrote them (source_id): an agent's tools, the plugins an administrator's
// bulk setting applies to (issue 46). Tags and sources are read when the
// selection is applied, so a sync that adds an operation under a selected
// tag adds it to the selection.
type Selection struct {
	Names   []string `json:"names,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	Sources []int64  `json:"sources,omitempty"`
}

// Empty reports whether sel names nothing: it selects no plugin.
func (sel Selection) Empty() bool {
	return len(sel.Names) == 0 && len(sel.Tags) == 0 && len(sel.Sources) == 0
}

// Selects reports whether sel picks p: by its name, one of its tags, or
// its import source.
func (sel Selection) Selects(p *plugins.Plugin) bool {
	if slices.Contains(sel.Names, p.Name) || p.SourceID != 0 && slices.Contains(sel.Sources, p.SourceID) {
		return true
	}
	for _, t := range p.Tags {
		if slices.Contains(sel.Tags, t) {
			return true
		}
	}
	return false
}

// Of returns the plugins of ps that sel picks, in their order.
func (sel Selection) Of(ps []*plugins.Plugin) []*plugins.Plugin {
	var out []*plugins.Plugin
	for _, p := range ps {
		if sel.Selects(p) {
			out = append(out, p)
		}
	}
	return out
}

// NamesIn returns the names of the plugins of ps that sel picks, in
// their order; none is an empty list, not nil (a JSON []).
func (sel Selection) NamesIn(ps []*plugins.Plugin) []string {
	names := []string{}
	for _, p := range sel.Of(ps) {
		names = append(names, p.Name)
	}
	return names
}

// Check says what is wrong with sel, its fields named after prefix
// ("" or "tools."): names that break the
// plugin name rule, empty tags, source ids that are not positive.
func (sel Selection) Check(prefix string) []plugins.FieldError {
	var errs []plugins.FieldError
	for i, n := range sel.Names {
		if !plugins.ValidName(n) {
			errs = append(errs, plugins.FieldError{Field: fmt.Sprintf("%snames[%d]", prefix, i), Message: fmt.Sprintf("%q is not a plugin name (^[a-zA-Z0-9_-]{1,64}$)", n)})
		}
	}
	for i, t := range sel.Tags {
		if t == "" || len(t) > 100 {
			errs = append(errs, plugins.FieldError{Field: fmt.Sprintf("%stags[%d]", prefix, i), Message: "expected a tag of 1 to 100 bytes"})
		}
	}
	for i, s := range sel.Sources {
		if s <= 0 {
			errs = append(errs, plugins.FieldError{Field: fmt.Sprintf("%ssources[%d]", prefix, i), Message: fmt.Sprintf("%d is not an import source id (GET /v1/sources lists them)", s)})
		}
	}
	return errs
}

// SelectedNames returns, in order, the names sel lists and those of every
// plugin of the catalog, enabled or not, it picks by tag or source: what
// an administrator's bulk setting writes (a listed name no row holds
// matches nothing there).
func (c *Catalog) SelectedNames(ctx context.Context, sel Selection) ([]string, error) {
	s, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	names := slices.Clone(sel.Names)
	for name, p := range s.byName {
		if sel.Selects(p) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return slices.Compact(names), nil
}
