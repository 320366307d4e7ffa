// Package mcpimport imports the tools of a registered MCP server as
// plugins of execution.type "mcp": the library behind `blindexec import mcp`
// and POST /v1/plugins/import/mcp.
//
// Each tool becomes one plugin:
//
//   - name: the tool's name with every character outside [a-zA-Z0-9_-]
//     replaced by "_" (rb.answer → rb_answer). When another plugin already
//     has that name (another server's tool, a hand-written plugin), the
//     server's name is prefixed (runbook_rb_answer); a name still taken, or
//     longer than 64, is cut and given a hash suffix derived from the
//     server id and the tool name, so the result is deterministic. A tool
//     keeps its plugin's name across re-imports.
//   - description: the tool's description (else its title, else its name).
//   - parameters: inputSchema through the shared resolver (package
//     plugins/schema) with depth limit 3, as seed 004 FR-003/FR-006 says:
//     $defs inlined and removed, cycles pruned to their type, one bad
//     property degraded without failing the tool.
//   - execution: {type: mcp, mcp_id, tool_name: the original name}.
//   - auth_config and required_credentials: the server's, so that the
//     executor resolves the user's credentials the server needs.
//
// Re-importing is a sync against the server's earlier import (the
// sys_ai_import_source row of kind "mcp" whose location is the server id):
// new tools are added, changed ones updated, unchanged ones (same content
// hash) not written, and plugins whose tool is gone are disabled. A tool
// that comes back is enabled again; a plugin an administrator disabled
// stays disabled.
package mcpimport

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/schema"
	"github.com/blindexec/blindexec/store"
)

// DefaultMaxDepth is the reference depth limit of MCP tool schemas
// (seed 004 FR-003).
const DefaultMaxDepth = 3

// Options tune Import.
type Options struct {
	By       string // create_by / update_by of the rows written
	MaxDepth int    // DefaultMaxDepth when zero
}

// Report says what an import did, by plugin name.
type Report struct {
	SourceID  int64     `json:"source_id"`
	Server    string    `json:"server"`
	Added     []string  `json:"added"`
	Updated   []string  `json:"updated"`
	Unchanged []string  `json:"unchanged"`
	Disabled  []string  `json:"disabled"`
	Failed    []Failure `json:"failed"`
	// Warnings name degraded or pruned subschemas, per tool.
	Warnings []string `json:"warnings,omitempty"`
}

// Failure is a tool that could not be imported.
type Failure struct {
	Tool  string `json:"tool"`
	Error string `json:"error"`
}

// ConversionError is a tool whose schema or plugin is unusable.
type ConversionError struct {
	Tool string
	Err  error
}

func (e *ConversionError) Error() string { return fmt.Sprintf("tool %q: %v", e.Tool, e.Err) }
func (e *ConversionError) Unwrap() error { return e.Err }

// Convert turns one tool of srv into a plugin called name. Warnings name
// the parts of the schema the resolver degraded or pruned.
func Convert(srv *store.MCPServer, t *sdk.Tool, name string, maxDepth int) (*plugins.Plugin, []string, error) {
	params, warnings, err := Parameters(t.InputSchema, maxDepth)
	if err != nil {
		return nil, nil, &ConversionError{Tool: t.Name, Err: err}
	}
	ac, err := srv.Auth()
	if err != nil {
		return nil, nil, err
	}
	p := &plugins.Plugin{
		SchemaVersion:       "v1",
		Name:                name,
		Title:               title(t),
		Description:         cmp.Or(strings.TrimSpace(plugins.PlainText(t.Description)), t.Title, t.Name),
		Parameters:          params,
		Execution:           plugins.Execution{Type: plugins.TypeMCP, MCPID: srv.ID, ToolName: t.Name},
		AuthConfig:          ac,
		RequiredCredentials: append([]string{}, ac.CredentialKeys()...),
	}
	if err := p.Validate(); err != nil {
		return nil, nil, &ConversionError{Tool: t.Name, Err: err}
	}
	return p, warnings, nil
}

// title is a tool's title, else its annotations', else its description's
// first sentence, else its name's words: search weighs a title, and a
// model reads it first.
func title(t *sdk.Tool) string {
	if t.Title != "" {
		return t.Title
	}
	if t.Annotations != nil && t.Annotations.Title != "" {
		return t.Annotations.Title
	}
	return cmp.Or(plugins.TitleFrom(plugins.PlainText(t.Description)), plugins.TitleFromName(t.Name))
}

// Parameters converts an MCP inputSchema (as the SDK decodes it, or any
// value that marshals to a JSON object) into OpenAI function parameters.
func Parameters(inputSchema any, maxDepth int) (json.RawMessage, []string, error) {
	// Measured as JSON, against plugins.DefaultSchemaLimits, before the
	// resolver expands anything: a server's schema is outside input.
	b, err := json.Marshal(inputSchema)
	if err != nil {
		return nil, nil, fmt.Errorf("inputSchema: %w", err)
	}
	in, ok := inputSchema.(map[string]any)
	if ok {
		err = plugins.CheckSchemaCostValue(len(b), in)
	} else if err = plugins.CheckSchemaCost(b); err == nil {
		if err := json.Unmarshal(b, &in); err != nil || in == nil {
			return nil, nil, fmt.Errorf("inputSchema is not a JSON object")
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("inputSchema: %w", err)
	}
	res, err := schema.Resolve(in, nil, schema.Options{MaxDepth: cmp.Or(maxDepth, DefaultMaxDepth), Parameters: true})
	if err != nil {
		return nil, nil, fmt.Errorf("inputSchema: %w", err)
	}
	out, err := json.Marshal(res.Schema)
	if err != nil {
		return nil, nil, fmt.Errorf("inputSchema: %w", err)
	}
	return out, res.Warnings, nil
}

// SanitizeName maps a tool name onto the OpenAI function-name rule
// ^[a-zA-Z0-9_-]{1,64}$, without shortening it.
func SanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "tool"
	}
	return string(b)
}

// fit cuts name to 64 characters with a suffix from the hash of key, when
// it is longer or when force is set (to make a taken name unique).
func fit(name, key string, force bool) string {
	if len(name) <= 64 && !force {
		return name
	}
	sum := sha256.Sum256([]byte(key))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:min(len(name), 64-len(suffix))] + suffix
}

// Import writes tools, the server's tools/list answer, to st as plugins, as
// a sync against the server's earlier import. Tools that fail to convert
// are reported, not fatal; the error is the store's.
func Import(ctx context.Context, st *store.Store, srv *store.MCPServer, tools []*sdk.Tool, opts Options) (*Report, error) {
	src, err := st.FindImportSource(ctx, store.SourceMCP, srv.ID)
	if errors.Is(err, store.ErrNotFound) {
		src = &store.ImportSource{Kind: store.SourceMCP, Location: srv.ID, Audit: store.Audit{CreateBy: opts.By, UpdateBy: opts.By}}
		err = st.CreateImportSource(ctx, src)
	}
	if err != nil {
		return nil, fmt.Errorf("import MCP server %s: %w", srv.Name, err)
	}
	rows, err := st.ListPlugins(ctx, store.PluginFilter{SourceID: &src.ID})
	if err != nil {
		return nil, fmt.Errorf("import MCP server %s: %w", srv.Name, err)
	}
	existing := make(map[string]*store.Plugin, len(rows)) // by tool name
	for i := range rows {
		if k := rows[i].SourceKey; k != nil {
			existing[*k] = &rows[i]
		}
	}

	rep := &Report{SourceID: src.ID, Server: srv.Name, Added: []string{}, Updated: []string{}, Unchanged: []string{}, Disabled: []string{}, Failed: []Failure{}}
	tools = slices.Clone(tools)
	slices.SortFunc(tools, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	seen := make(map[string]bool, len(tools))
	assigned := make(map[string]bool, len(tools))
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
		p, warnings, err := Convert(srv, t, name, opts.MaxDepth)
		if err != nil {
			rep.Failed = append(rep.Failed, Failure{Tool: t.Name, Error: err.Error()})
			continue
		}
		for _, w := range warnings {
			rep.Warnings = append(rep.Warnings, t.Name+": "+w)
		}
		if err := write(ctx, st, src.ID, t.Name, p, old, opts.By, rep); err != nil {
			return nil, err
		}
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

// write creates or updates the plugin of one tool, or leaves it alone when
// its content is unchanged.
func write(ctx context.Context, st *store.Store, sourceID int64, tool string, p *plugins.Plugin, old *store.Plugin, by string, rep *Report) error {
	doc, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode plugin %q: %w", p.Name, err)
	}
	sum := sha256.Sum256(doc)
	hash := hex.EncodeToString(sum[:])
	if old != nil && old.ContentHash != nil && *old.ContentHash == hash {
		rep.Unchanged = append(rep.Unchanged, p.Name)
		return nil
	}
	row, err := store.RowFromPlugin(p)
	if err != nil {
		return err
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
	row.Remark = old.Remark
	if old.ContentHash != nil {
		row.Status = old.Status // an administrator's choice stands
	}
	if err := st.UpdatePlugin(ctx, row); err != nil {
		return fmt.Errorf("import tool %q: %w", tool, err)
	}
	rep.Updated = append(rep.Updated, p.Name)
	return nil
}

// freeName picks the plugin name of a new tool: its sanitized name, else
// prefixed with the server's name, else made unique by a hash suffix. A
// reserved name (search_tools, call_tool) is never free.
func freeName(ctx context.Context, st *store.Store, srv *store.MCPServer, tool string, assigned map[string]bool) (string, error) {
	key := srv.ID + "\x00" + tool
	candidates := []string{
		fit(SanitizeName(tool), key, false),
		fit(SanitizeName(srv.Name+"_"+tool), key, false),
		fit(SanitizeName(srv.Name+"_"+tool), key, true),
	}
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

// ImportServer lists the tools of the registered server ref (id or name)
// afresh through m, with creds filling its auth config, and imports them
// (`blindexec import mcp SERVER`).
func ImportServer(ctx context.Context, st *store.Store, m *mcp.Manager, ref string, creds map[string]string, opts Options) (*Report, error) {
	srv, err := st.GetMCPServer(ctx, ref)
	if err != nil {
		return nil, err
	}
	tools, err := m.Tools(ctx, srv.ID, creds, true)
	if err != nil {
		return nil, err
	}
	return Import(ctx, st, srv, tools, opts)
}

// ServerNameFromURL names a server registered by its URL alone: its host,
// sanitized to the plugin-name rule; "" for a URL without a host.
func ServerNameFromURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	name := SanitizeName(u.Host)
	return name[:min(len(name), 64)]
}
