// Package importer syncs imported sources into the catalog: an OpenAPI
// document converted by plugins/openapi, an MCP server's tools converted by
// plugins/mcpimport (listed through the engine's MCP client). Conversion
// stays with the formats; writing rows, and dialing a server to list its
// tools, live here, above the engine and the store.
package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/invisible"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

// SyncResult reports what a sync did (or, in a dry run, would do). The
// lists hold plugin names.
type SyncResult struct {
	SourceID int64 `json:"source_id"` // 0 in a dry run of a new source
	// UpToDate reports that the document has the sha256 (and prefix) of the
	// last sync from its location: nothing was converted or written.
	UpToDate bool     `json:"up_to_date"`
	Added    []string `json:"added"`
	Changed  []string `json:"changed"`
	// ChangedFields says, by plugin name, what changed in each of Changed:
	// title, description, icon_url, parameters, and the execution
	// config's parts (execution, auth_config, fixed_params, tags, keywords).
	ChangedFields map[string][]string `json:"changed_fields,omitempty"`
	// Removed are plugins of operations no longer in the document: they
	// are disabled, not deleted.
	Removed   []string `json:"removed"`
	Unchanged []string `json:"unchanged"`
	// Renamed are plugins that take a new name (Options.Rename).
	Renamed []Rename          `json:"renamed,omitempty"`
	Failed  []openapi.Failure `json:"failed"`
	// Consequential is each written plugin's classification (issue 33):
	// whether a call waits for a person's confirmation.
	Consequential map[string]bool `json:"consequential,omitempty"`
	// Providers are the OAuth providers the plugins connect users to
	// (issue 34): matched by their URLs, or created disabled.
	Providers []*ProviderResult `json:"providers,omitempty"`
	// InvisibleRemoved says, by plugin name, what was removed from the
	// texts a model reads (issue 44): field, count and kinds.
	InvisibleRemoved map[string][]invisible.Removal `json:"invisible_removed,omitempty"`
	// Operations are the converted operations, with their warnings.
	Operations []openapi.Operation `json:"-"`
}

// Rename is a plugin's name change.
type Rename struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Warnings lists each operation's warnings, and the invisible characters
// removed from its plugin, as "name: warning".
func (r *SyncResult) Warnings() []string {
	var out []string
	for _, op := range r.Operations {
		for _, w := range op.Warnings {
			out = append(out, op.Plugin.Name+": "+w)
		}
		for _, rm := range op.Plugin.InvisibleRemoved {
			out = append(out, op.Plugin.Name+": "+rm.String())
		}
	}
	return out
}

// invisibleRemoved adds p's removals, if any, to a report's by name.
func invisibleRemoved(by map[string][]invisible.Removal, p *plugins.Plugin) map[string][]invisible.Removal {
	if len(p.InvisibleRemoved) == 0 {
		return by
	}
	if by == nil {
		by = map[string][]invisible.Removal{}
	}
	by[p.Name] = p.InvisibleRemoved
	return by
}

// syncBy is the audit name of rows the importer writes.
const syncBy = "openapi-import"

// OpenAPI converts doc and writes the result to st as a sync against the
// source's earlier imports: the operations a plugin of this source
// already has (matched by "METHOD /path") are updated when their plugin
// changed, new ones are added, and plugins of operations the document no
// longer has are disabled. The source is identified by Options.Source,
// else by location (a URL or file), else, for a document given inline
// (location ""), by its title. A document with the sha256 and the options
// of the last sync changes nothing, unless Options.Force. With dryRun,
// nothing is written.
//
// Plugins keep their status across syncs (an administrator may have
// disabled one) unless the conversion disables them or they come back
// after a removal, and their names unless Options.Rename. A new plugin
// whose name another source's plugin has is named after its document
// too ("<title>_<name>"). The store has no transactions to offer: an
// error midway leaves the earlier writes, and the source's sha256 is
// written last, so that the next sync redoes the work.
func OpenAPI(ctx context.Context, st *store.Store, location string, doc *openapi.Document, opts openapi.Options, dryRun bool) (*SyncResult, error) {
	given := location
	location = openapi.SourceName(location, doc, opts)
	fingerprint, err := opts.Fingerprint()
	if err != nil {
		return nil, fmt.Errorf("sync %s: %w", location, err)
	}
	src, err := st.FindImportSource(ctx, store.SourceOpenAPI, location)
	if errors.Is(err, store.ErrNotFound) && given != location && opts.Source == "" {
		src, err = legacySource(ctx, st, given, location, dryRun)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		src = nil
	case err != nil:
		return nil, fmt.Errorf("sync %s: %w", location, err)
	case src.SHA256 == doc.SHA256 && src.Options == fingerprint && !opts.Force:
		return &SyncResult{SourceID: src.ID, UpToDate: true}, nil
	}
	ops, failures, err := openapi.Convert(doc, opts)
	if err != nil {
		return nil, fmt.Errorf("sync %s: %w", location, err)
	}
	res := &SyncResult{Failed: failures, Operations: ops}

	existing := map[string]*store.Plugin{}
	if src != nil {
		res.SourceID = src.ID
		rows, err := st.ListPlugins(ctx, store.PluginFilter{SourceID: &src.ID})
		if err != nil {
			return nil, fmt.Errorf("sync %s: %w", location, err)
		}
		for i := range rows {
			if k := rows[i].SourceKey; k != nil {
				existing[*k] = &rows[i]
			}
		}
	} else if !dryRun {
		src = &store.ImportSource{Kind: store.SourceOpenAPI, Location: location, Prefix: opts.Prefix, Audit: store.Audit{CreateBy: syncBy}}
		if err := st.CreateImportSource(ctx, src); err != nil {
			return nil, fmt.Errorf("sync %s: %w", location, err)
		}
		res.SourceID = src.ID
	}
	if err := settleNames(ctx, st, ops, existing, res, doc, opts); err != nil {
		return nil, fmt.Errorf("sync %s: %w", location, err)
	}
	if err := settleProviders(ctx, st, ops, res, dryRun); err != nil {
		return nil, fmt.Errorf("sync %s: %w", location, err)
	}
	imported := make([]*plugins.Plugin, len(ops))
	for i := range ops {
		imported[i] = ops[i].Plugin
	}
	if err := settleHosts(ctx, st, imported, func(i int, msg string) { ops[i].Warnings = append(ops[i].Warnings, msg) }); err != nil {
		return nil, fmt.Errorf("sync %s: %w", location, err)
	}
	for _, op := range ops {
		res.InvisibleRemoved = invisibleRemoved(res.InvisibleRemoved, op.Plugin)
	}

	rep := openapi.Reporter{F: opts.Progress}
	rep.Start(openapi.PhaseWriting, len(ops))
	validator := plugins.NewValidator() // the document's parts proven once
	for i, op := range ops {
		rep.Step(i)
		// What the API and the CLI refuse, an import does not write either.
		if err := validator.Validate(op.Plugin); err != nil {
			res.Failed = append(res.Failed, openapi.Failure{Key: op.Key, Reason: err.Error()})
			continue
		}
		row, err := catalog.RowFromPlugin(op.Plugin)
		if err == nil {
			err = storable(st.Dialect(), row)
		}
		if err != nil {
			res.Failed = append(res.Failed, openapi.Failure{Key: op.Key, Reason: err.Error()})
			continue
		}
		hash, err := openapi.ContentHash(op)
		if err != nil {
			res.Failed = append(res.Failed, openapi.Failure{Key: op.Key, Reason: err.Error()})
			continue
		}
		key := op.Key
		row.SourceID, row.SourceKey, row.ContentHash = &res.SourceID, &key, &hash
		old := existing[op.Key]
		var list *[]string
		switch {
		case old == nil:
			list = &res.Added
			row.CreateBy, row.UpdateBy = syncBy, syncBy
			if !dryRun {
				err = st.CreatePlugin(ctx, row)
			}
		case old.ContentHash != nil && *old.ContentHash == hash:
			res.Unchanged = append(res.Unchanged, row.Name)
			res.classify(old)
			continue
		default:
			list = &res.Changed
			if old.ContentHash == nil {
				list = &res.Added // back after a removal
			} else if row.Status != store.StatusDisabled {
				row.Status = old.Status
			}
			row.ID, row.CreateBy, row.UpdateBy = old.ID, old.CreateBy, syncBy
			catalog.KeepAdministrators(row, old)
			if list == &res.Changed {
				if res.ChangedFields == nil {
					res.ChangedFields = map[string][]string{}
				}
				res.ChangedFields[row.Name] = changedFields(old, row)
			}
			if !dryRun {
				err = st.UpdatePlugin(ctx, row)
			}
		}
		if err != nil {
			reason := err.Error()
			if errors.Is(err, store.ErrDuplicate) {
				reason = fmt.Sprintf("the name %s is taken by another plugin (give a --prefix)", row.Name)
			}
			res.Failed = append(res.Failed, openapi.Failure{Key: op.Key, Reason: reason})
			continue
		}
		*list = append(*list, row.Name)
		res.classifyWritten(op.Plugin, row)
	}
	rep.Step(len(ops))

	for _, key := range slices.Sorted(maps.Keys(existing)) {
		row := existing[key]
		if row.ContentHash == nil || openapi.HasOperation(doc, key) {
			continue // still there (perhaps not selected), or removed before
		}
		res.Removed = append(res.Removed, row.Name)
		if dryRun {
			continue
		}
		row.Status, row.ContentHash, row.UpdateBy = store.StatusDisabled, nil, syncBy
		if err := st.UpdatePlugin(ctx, row); err != nil {
			return nil, fmt.Errorf("sync %s: disable %s: %w", location, row.Name, err)
		}
	}

	if dryRun {
		return res, nil
	}
	now := time.Now()
	src.SHA256, src.Prefix, src.Options, src.ImportedTime, src.UpdateBy = doc.SHA256, opts.Prefix, fingerprint, &now, syncBy
	src.Title, src.TagDescriptions = searchMetadata(doc)
	src.OperationCount = len(ops) + len(failures)
	src.ImportedCount = len(res.Added) + len(res.Changed) + len(res.Unchanged)
	src.FailedCount = len(res.Failed)
	if err := st.UpdateImportSource(ctx, src); err != nil {
		return nil, fmt.Errorf("sync %s: %w", location, err)
	}
	return res, nil
}

// legacySource is the source a sync from given (a URL with userinfo or a
// query credential) wrote at the URL whole before migration 00031 (before
// 00034 for a query credential), or before leftovers77 at
// the URL cut at its last @ (redact.Value: "https://…@scope/spec.json"
// for an @ in its path): it takes its location now (unless dryRun), so
// that its password is no longer stored in clear, and its location is the
// URL.
func legacySource(ctx context.Context, st *store.Store, given, location string, dryRun bool) (*store.ImportSource, error) {
	src, err := st.FindImportSource(ctx, store.SourceOpenAPI, given)
	if cut := redact.Value(given); errors.Is(err, store.ErrNotFound) && cut != location {
		src, err = st.FindImportSource(ctx, store.SourceOpenAPI, cut)
	}
	if err != nil {
		return nil, errors.Unwrap(err) // its message quotes given whole
	}
	if dryRun {
		return src, nil
	}
	src.Location = location
	if err := st.UpdateImportSource(ctx, src); err != nil {
		return nil, err
	}
	return src, nil
}

// classify lists row's classification; a row that does not parse is
// left out (the sync reports it elsewhere).
func (r *SyncResult) classify(row *store.Plugin) {
	if p, err := catalog.PluginFromRow(row); err == nil {
		r.list(p)
	}
}

// classifyWritten lists the classification of row, just made of p, with
// the administrator's setting it kept: p as the row would read back,
// without decoding the row again (a tenth of an import's time).
func (r *SyncResult) classifyWritten(p *plugins.Plugin, row *store.Plugin) {
	setting, err := catalog.ConsequentialSetting(row.Consequential)
	if err != nil {
		return
	}
	read := *p
	read.Name, read.Consequential = row.Name, setting
	r.list(&read)
}

func (r *SyncResult) list(p *plugins.Plugin) {
	if r.Consequential == nil {
		r.Consequential = map[string]bool{}
	}
	r.Consequential[p.Name] = p.IsConsequential()
}

// settleNames fixes the names of the converted plugins against the store:
// a plugin of an operation this source has already imported keeps its
// name unless opts.Rename (then the change is listed in res.Renamed); a
// new one whose name another source's plugin holds takes the document's
// title before it.
func settleNames(ctx context.Context, st *store.Store, ops []openapi.Operation, existing map[string]*store.Plugin, res *SyncResult, doc *openapi.Document, opts openapi.Options) error {
	var fresh []string
	for _, op := range ops {
		old := existing[op.Key]
		switch {
		case old == nil:
			fresh = append(fresh, op.Plugin.Name)
		case old.Name == op.Plugin.Name:
		case opts.Rename:
			res.Renamed = append(res.Renamed, Rename{From: old.Name, To: op.Plugin.Name})
		default:
			op.Plugin.Name = old.Name
		}
	}
	taken, err := st.GetPluginsByName(ctx, fresh)
	if err != nil || len(taken) == 0 {
		return err
	}
	other := map[string]bool{}
	for _, p := range taken {
		if p.SourceID == nil || res.SourceID == 0 || *p.SourceID != res.SourceID {
			other[p.Name] = true
		}
	}
	for _, op := range ops {
		if existing[op.Key] == nil && other[op.Plugin.Name] {
			if name := openapi.QualifiedName(doc, op.Plugin.Name, op.Key); name != "" {
				op.Plugin.Name = name
			}
		}
	}
	return nil
}

// changedFields names what differs between a plugin's stored row and its
// new one, comparing JSON by meaning (a database may reorder its keys).
func changedFields(old, cur *store.Plugin) []string {
	var out []string
	for _, f := range []struct {
		name     string
		old, cur string
	}{{"title", old.Title, cur.Title}, {"description", old.Description, cur.Description}, {"icon_url", old.IconURL, cur.IconURL}} {
		if f.old != f.cur {
			out = append(out, f.name)
		}
	}
	if !sameJSON(old.ParameterSchema, cur.ParameterSchema) {
		out = append(out, "parameters")
	}
	var oc, cc map[string]json.RawMessage
	_ = json.Unmarshal(old.ExecutionConfig, &oc) // unreadable: every part differs
	_ = json.Unmarshal(cur.ExecutionConfig, &cc)
	for _, k := range []string{"execution", "auth_config", "fixed_params", "strict", "tags", "keywords", "response_words", "consequential_hint"} {
		if !sameJSON(oc[k], cc[k]) {
			out = append(out, k)
		}
	}
	return out
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// searchMetadata is what tool search reads of a document (issue 49): its
// title and its tags' descriptions, as the source's columns store them
// (nil for none).
func searchMetadata(doc *openapi.Document) (title, tags *string) {
	if t := strings.TrimSpace(doc.Title); t != "" {
		title = &t
	}
	if d := doc.TagDescriptions(); len(d) > 0 {
		if b, err := json.Marshal(d); err == nil {
			s := string(b)
			tags = &s
		}
	}
	return title, tags
}
