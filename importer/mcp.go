package importer

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/internal/invisible"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/mcpimport"
	"github.com/blindexec/blindexec/store"
)

// An MCP server's import is a sync against its earlier import (the
// sys_ai_import_source row of kind "mcp" whose location is the server id):
// new tools are added, changed ones updated, unchanged ones (same content
// hash) not written, and plugins whose tool is gone are disabled. A tool
// that comes back is enabled again; a plugin an administrator disabled
// stays disabled.

// MCPOptions tune MCPTools.
type MCPOptions struct {
	By       string // create_by / update_by of the rows written
	MaxDepth int    // DefaultMaxDepth when zero
	// MaxBytes bounds what the import holds in all: its plugins, its
	// report's lines (plugins.DefaultImportMaxBytes when 0;
	// BLINDEXEC_IMPORT_MAX_MB, as an OpenAPI import's).
	MaxBytes int
}

// MCPReport says what an MCP import did, by plugin name.
type MCPReport struct {
	SourceID  int64        `json:"source_id"`
	Server    string       `json:"server"`
	Added     []string     `json:"added"`
	Updated   []string     `json:"updated"`
	Unchanged []string     `json:"unchanged"`
	Disabled  []string     `json:"disabled"`
	Failed    []MCPFailure `json:"failed"`
	// Warnings name degraded or pruned subschemas, per tool, and the
	// invisible characters removed, per plugin.
	Warnings []string `json:"warnings,omitempty"`
	// Consequential is each imported tool's classification (issue 33):
	// whether a call waits for a person's confirmation.
	Consequential map[string]bool `json:"consequential,omitempty"`
	// InvisibleRemoved says, by plugin name, what was removed from the
	// texts a model reads (issue 44): field, count and kinds.
	InvisibleRemoved map[string][]invisible.Removal `json:"invisible_removed,omitempty"`
}

// MCPFailure is a tool that could not be imported.
type MCPFailure struct {
	Tool  string `json:"tool"`
	Error string `json:"error"`
}

// MCPTools writes tools, the server's tools/list answer, to st as plugins,
// as a sync against the server's earlier import. Tools that fail to convert
// are reported, not fatal; the error is the store's, or a
// *mcpimport.TooLargeError when the plugins would be over the import's
// limit (MCPOptions.MaxBytes): every tool is converted and counted before
// anything is written, so that a refused import writes nothing.
func MCPTools(ctx context.Context, st *store.Store, srv *store.MCPServer, tools []*sdk.Tool, opts MCPOptions) (*MCPReport, error) {
	src, err := st.FindImportSource(ctx, store.SourceMCP, srv.ID)
	if errors.Is(err, store.ErrNotFound) {
		src, err = nil, nil // created once the tools are known to fit
	}
	if err != nil {
		return nil, fmt.Errorf("import MCP server %s: %w", srv.Name, err)
	}
	existing := map[string]*store.Plugin{} // by tool name
	if src != nil {
		rows, err := st.ListPlugins(ctx, store.PluginFilter{SourceID: &src.ID})
		if err != nil {
			return nil, fmt.Errorf("import MCP server %s: %w", srv.Name, err)
		}
		for i := range rows {
			if k := rows[i].SourceKey; k != nil {
				existing[*k] = &rows[i]
			}
		}
	}

	rep := &MCPReport{Server: srv.Name, Added: []string{}, Updated: []string{}, Unchanged: []string{}, Disabled: []string{}, Failed: []MCPFailure{}}
	auth, authErr := catalog.MCPServerAuth(srv)
	conv := mcpimport.Server{ID: srv.ID, Name: srv.Name, Auth: auth, Trusted: srv.Trusted}
	tools = slices.Clone(tools)
	slices.SortFunc(tools, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	seen := make(map[string]bool, len(tools))
	assigned := make(map[string]bool, len(tools))
	limit, total := cmp.Or(opts.MaxBytes, plugins.DefaultImportMaxBytes), 0
	var made []convertedTool
	for _, t := range tools {
		if seen[t.Name] {
			continue // a server listing a tool twice
		}
		seen[t.Name] = true
		old := existing[t.Name]
		name := ""
		if old != nil {
			name = old.Name
		} else if name, err = freeName(ctx, st, srv, t.Name, assigned); err != nil {
			return nil, err
		}
		assigned[name] = true
		// What the import holds of the tool: its plugin, its report's
		// lines; a failure's message too.
		size := len(name) + len(t.Name)
		if authErr != nil {
			rep.Failed = append(rep.Failed, MCPFailure{Tool: t.Name, Error: authErr.Error()})
			size += len(authErr.Error())
		} else if p, warnings, err := mcpimport.Convert(conv, t, name, opts.MaxDepth); err != nil {
			rep.Failed = append(rep.Failed, MCPFailure{Tool: t.Name, Error: err.Error()})
			size += len(err.Error())
		} else if doc, err := pluginDocument(p); err != nil {
			return nil, err
		} else {
			for _, w := range warnings {
				rep.Warnings = append(rep.Warnings, t.Name+": "+w)
				size += len(t.Name) + len(w)
			}
			rep.InvisibleRemoved = invisibleRemoved(rep.InvisibleRemoved, p)
			for _, r := range p.InvisibleRemoved {
				rep.Warnings = append(rep.Warnings, p.Name+": "+r.String())
			}
			made = append(made, convertedTool{tool: t.Name, p: p, doc: doc, old: old})
			size += len(doc)
		}
		if total += size; total > limit {
			return nil, &mcpimport.TooLargeError{Max: limit, Tool: t.Name, Tools: len(seen)}
		}
	}
	imported := make([]*plugins.Plugin, len(made))
	for i := range made {
		imported[i] = made[i].p
	}
	if err := settleHosts(ctx, st, imported, func(i int, msg string) { rep.Warnings = append(rep.Warnings, made[i].p.Name+": "+msg) }); err != nil {
		return nil, fmt.Errorf("import MCP server %s: %w", srv.Name, err)
	}
	if src == nil {
		src = &store.ImportSource{Kind: store.SourceMCP, Location: srv.ID, Audit: store.Audit{CreateBy: opts.By, UpdateBy: opts.By}}
		if err := st.CreateImportSource(ctx, src); err != nil {
			return nil, fmt.Errorf("import MCP server %s: %w", srv.Name, err)
		}
	}
	rep.SourceID = src.ID
	for _, c := range made {
		p := c.p
		if err := writeTool(ctx, st, src.ID, c, opts.By, rep); err != nil {
			var ns notStorable
			if errors.As(err, &ns) {
				rep.Failed = append(rep.Failed, MCPFailure{Tool: c.tool, Error: err.Error()})
				continue
			}
			return nil, err
		}
		if c.old != nil {
			// The column was written by this engine or checked by the
			// catalog's load; an unreadable one leaves the suggestion.
			p.Consequential, _ = catalog.ConsequentialSetting(c.old.Consequential)
		}
		if rep.Consequential == nil {
			rep.Consequential = map[string]bool{}
		}
		rep.Consequential[p.Name] = p.IsConsequential()
	}
	for key, row := range existing {
		if seen[key] || row.ContentHash == nil {
			continue // present, or already disabled as removed
		}
		row.Status = store.StatusDisabled
		row.ContentHash = nil // marks "removed by the sync": a comeback re-enables it
		row.UpdateBy = opts.By
		if err := st.UpdatePlugin(ctx, row); err != nil {
			return nil, fmt.Errorf("import MCP server %s: %w", srv.Name, err)
		}
		rep.Disabled = append(rep.Disabled, row.Name)
	}
	for _, names := range [][]string{rep.Added, rep.Updated, rep.Unchanged, rep.Disabled} {
		slices.Sort(names)
	}

	now := time.Now()
	src.ImportedTime = &now
	src.OperationCount = len(seen)
	src.ImportedCount = len(seen) - len(rep.Failed)
	src.FailedCount = len(rep.Failed)
	src.Prefix = srv.Name
	src.UpdateBy = opts.By
	if err := st.UpdateImportSource(ctx, src); err != nil {
		return nil, fmt.Errorf("import MCP server %s: %w", srv.Name, err)
	}
	return rep, nil
}

// convertedTool is a tool's plugin, encoded and counted, waiting to be
// written.
type convertedTool struct {
	tool string
	p    *plugins.Plugin
	doc  []byte // pluginDocument(p): its content hash's input
	old  *store.Plugin
}

// pluginDocument is what a tool's content hash reads: the plugin's JSON,
// and its response words stored beside it (plugins.Plugin.ResponseWords).
func pluginDocument(p *plugins.Plugin) ([]byte, error) {
	doc, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode plugin %q: %w", p.Name, err)
	}
	if len(p.ResponseWords) > 0 {
		words, _ := json.Marshal(p.ResponseWords)
		doc = append(doc, words...)
	}
	return doc, nil
}

// writeTool creates or updates the plugin of one tool, or leaves it alone when
// its content is unchanged.
func writeTool(ctx context.Context, st *store.Store, sourceID int64, c convertedTool, by string, rep *MCPReport) error {
	p, old, tool := c.p, c.old, c.tool
	sum := sha256.Sum256(c.doc)
	hash := hex.EncodeToString(sum[:])
	if old != nil && old.ContentHash != nil && *old.ContentHash == hash {
		rep.Unchanged = append(rep.Unchanged, p.Name)
		return nil
	}
	row, err := catalog.RowFromPlugin(p)
	if err != nil {
		return err
	}
	if err := storable(st.Dialect(), row); err != nil {
		return notStorable{err}
	}
	row.SourceID, row.SourceKey, row.ContentHash = &sourceID, &tool, &hash
	row.UpdateBy = by
	if old == nil {
		row.CreateBy = by
		if err := st.CreatePlugin(ctx, row); err != nil {
			return fmt.Errorf("import tool %q: %w", tool, err)
		}
		rep.Added = append(rep.Added, p.Name)
		return nil
	}
	row.ID = old.ID
	catalog.KeepAdministrators(row, old)
	// An administrator's choice stands, unless the import disables the
	// plugin (settleHosts), its remark saying why.
	if old.ContentHash != nil && row.Status != store.StatusDisabled {
		row.Status = old.Status
	}
	if row.Status != store.StatusDisabled || row.Remark == "" {
		row.Remark = old.Remark
	}
	if err := st.UpdatePlugin(ctx, row); err != nil {
		return fmt.Errorf("import tool %q: %w", tool, err)
	}
	rep.Updated = append(rep.Updated, p.Name)
	return nil
}

// freeName picks the plugin name of a new tool: the first of
// mcpimport.Names that no plugin has. A reserved name (search_tools,
// call_tool) is never free.
func freeName(ctx context.Context, st *store.Store, srv *store.MCPServer, tool string, assigned map[string]bool) (string, error) {
	candidates := mcpimport.Names(srv.ID, srv.Name, tool)
	for _, name := range candidates {
		if assigned[name] || plugins.Reserved(name) {
			continue
		}
		_, err := st.GetPlugin(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return name, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("import tool %q: no free plugin name (tried %s)", tool, strings.Join(candidates, ", "))
}

// MCPServer lists the tools of the registered server ref (id or name)
// afresh through m, with creds filling its auth config, and imports them
// (`blindexec import mcp SERVER`).
func MCPServer(ctx context.Context, st *store.Store, m *mcp.Manager, ref string, creds map[string]string, opts MCPOptions) (*MCPReport, error) {
	srv, err := st.GetMCPServer(ctx, ref)
	if err != nil {
		return nil, err
	}
	tools, err := m.Tools(ctx, srv.ID, creds, true)
	if err != nil {
		return nil, err
	}
	return MCPTools(ctx, st, srv, tools, opts)
}
