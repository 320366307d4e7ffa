// Package catalog keeps a replica's parsed copy of the plugin catalog
// (sys_ai_plugin) and reloads it when the plugins' change counter moves, so
// that no call reads or parses a plugin row, and a change made anywhere
// (another replica, the CLI, RuoYi with plain SQL) is seen after one poll.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// Source lists plugin rows; *store.Store implements it.
type Source interface {
	ListPlugins(ctx context.Context, f store.PluginFilter) ([]store.Plugin, error)
}

// Versions tells the catalog's version; *store.Watcher implements it.
type Versions interface {
	Current() store.Versions
}

// ReloadRetry is how long after a failed reload the calls serve what is
// held without asking the database again: a database that does not
// answer holds one reload (store.QueryTimeout), not every call's in turn.
const ReloadRetry = time.Second

// Catalog is the parsed catalog. It is safe for concurrent use.
type Catalog struct {
	src     Source
	changes Versions
	logger  *slog.Logger

	mu       sync.Mutex // serializes reloads
	failedAt time.Time  // when the last reload failed (zero once one succeeds), under mu
	// decided holds each row of the last snapshot, by content, under mu:
	// a reload converts and decides only the rows that changed. Rebuilt
	// by each load, so it holds no more rows than the table.
	decided map[rowKey]decision
	snap    atomic.Pointer[snapshot]
	reloads []func(enabled []*plugins.Plugin, version int64)
}

type snapshot struct {
	version int64
	byName  map[string]*plugins.Plugin
	enabled []*plugins.Plugin // in name order
	all     []*plugins.Plugin // enabled or not, in name order
	// byTool is the row calling each tool of each MCP server: an enabled
	// one before a disabled one, then the oldest (lowest plugin_id).
	byTool map[mcpTool]*plugins.Plugin
	// leftOut is why each row left out was, by the row's name: what an
	// administrator reading the row is told (LeftOut).
	leftOut map[string]error
	// unserved are the rows left out that decode: no call's, but the
	// keys they read are the catalog's (RowsAt).
	unserved []*plugins.Plugin
}

// decision is what a load made of a row's content: the plugin
// PluginFromRow made of it (never handed out: each snapshot gets a copy,
// whose Source it sets) or why not, and whether that plugin was held to
// the protocol (plugins.Validator.Check), with what result.
type decision struct {
	p       *plugins.Plugin
	err     error
	checked bool
}

// mcpTool is a tool of a registered MCP server: its id and the tool's
// own name there.
type mcpTool struct{ server, tool string }

// New returns the catalog of src, fresh while changes' Plugins counter
// stays where it was when the catalog last loaded.
func New(src Source, changes Versions, logger *slog.Logger) *Catalog {
	if logger == nil {
		logger = slog.Default()
	}
	return &Catalog{src: src, changes: changes, logger: logger}
}

// OnReload registers fn, called with the enabled plugins after every
// reload (indexes built from the catalog follow it this way). Register
// before use.
func (c *Catalog) OnReload(fn func(enabled []*plugins.Plugin, version int64)) {
	c.mu.Lock()
	c.reloads = append(c.reloads, fn)
	c.mu.Unlock()
}

// current returns a snapshot at least as new as the counter: the one held,
// or a reload. When a reload fails and a snapshot is held, that snapshot is
// served (and the failure logged): the database being briefly unreachable
// does not stop calls to plugins already known.
func (c *Catalog) current(ctx context.Context) (*snapshot, error) {
	want := c.changes.Current().Plugins
	if s := c.snap.Load(); s != nil && s.version == want {
		return s, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	held := c.snap.Load()
	if held != nil && held.version == want {
		return held, nil // reloaded while this call waited
	}
	if held != nil && time.Since(c.failedAt) < ReloadRetry {
		return held, nil // a reload failed a moment ago, maybe while this call waited: not asked again per call
	}
	// Bounded, and not the call's cancellation: the calls queued on mu
	// wait for it.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.QueryTimeout)
	s, err := c.load(lctx, want)
	cancel()
	if err != nil {
		if held != nil {
			c.failedAt = time.Now()
			c.logger.WarnContext(ctx, "catalog reload failed; serving the last one read", "version", held.version, "err", err)
			return held, nil
		}
		return nil, err
	}
	c.failedAt = time.Time{}
	c.snap.Store(s)
	for _, fn := range c.reloads {
		fn(s.enabled, s.version)
	}
	return s, nil
}

// LeftOut says why each row of sys_ai_plugin the catalog holds no
// plugin of was left out (its content failed the protocol's check, each
// field's error), by the row's name: for the administrator's pages,
// which read rows, never for a caller, to whom such a plugin does not
// exist. The map is the snapshot's: not to be changed.
func (c *Catalog) LeftOut(ctx context.Context) (map[string]error, error) {
	s, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	return s.leftOut, nil
}

// load reads every plugin. The counter was read before the rows, so the
// rows are at least as new as the version they are tagged with.
func (c *Catalog) load(ctx context.Context, version int64) (*snapshot, error) {
	rows, err := c.src.ListPlugins(ctx, store.PluginFilter{})
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	s := &snapshot{version: version, byName: make(map[string]*plugins.Plugin, len(rows)), byTool: map[mcpTool]*plugins.Plugin{}}
	stored := make(map[string]bool, len(rows))
	for i := range rows {
		stored[rows[i].Name] = true
	}
	sources := c.searchSources(ctx)
	// A row written with plain SQL (RuoYi's) passed no check: it is held
	// to the protocol by the API's own decision (plugins.Parse's), so that
	// one the engine would refuse (method "FETCH", a timeout_ms of -5) is
	// neither shown to a model nor sent. The validator proves schemas
	// without compiling them.
	v := plugins.NewValidator()
	decided := make(map[rowKey]decision, len(rows))
	var buf []byte
	for i := range rows {
		var k rowKey
		k, buf = keyOf(&rows[i], buf)
		d, held := c.decided[k]
		if !held {
			d.p, d.err = PluginFromRow(&rows[i])
		}
		err := d.err
		if err == nil && d.p.Name != rows[i].Name && (stored[d.p.Name] || s.byName[d.p.Name] != nil) {
			err = fmt.Errorf("name: without its invisible characters it is %q, another row's name", d.p.Name)
		} else if err == nil && !d.checked {
			d.err, d.checked = v.Check(d.p), true
			err = d.err
		}
		decided[k] = d
		if err != nil {
			// One bad row (RuoYi writes them by hand) must not hide the
			// others; a call of it is not found, and this log says why.
			c.logger.WarnContext(ctx, "plugin row left out of the catalog", "plugin", rows[i].Name, "err", err)
			if s.leftOut == nil {
				s.leftOut = map[string]error{}
			}
			s.leftOut[rows[i].Name] = err
			if d.p != nil {
				p := *d.p
				s.unserved = append(s.unserved, &p)
			}
			continue
		}
		p := new(plugins.Plugin)
		*p = *d.p
		p.Source = sources[p.SourceID]
		s.byName[p.Name] = p
		s.all = append(s.all, p)
		if p.Enabled() {
			s.enabled = append(s.enabled, p)
		}
		if p.ExecType() == plugins.TypeMCP {
			k := mcpTool{p.Execution.MCPID, p.Execution.ToolName}
			if held := s.byTool[k]; held == nil || callsBefore(p, held) {
				s.byTool[k] = p
			}
		}
	}
	c.decided = decided
	return s, nil
}

// callsBefore reports whether p rather than held is the row a call of
// their tool is: an enabled one first, then the oldest.
func callsBefore(p, held *plugins.Plugin) bool {
	if p.Enabled() != held.Enabled() {
		return p.Enabled()
	}
	return p.ID < held.ID
}

// Plugin returns the plugin called name, enabled or not, or an error
// wrapping store.ErrNotFound.
func (c *Catalog) Plugin(ctx context.Context, name string) (*plugins.Plugin, error) {
	s, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	p, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("plugin %q: %w", name, store.ErrNotFound)
	}
	return p, nil
}

// Row is the plugin called name, enabled or not, nil when there is none:
// a service of an agent's tools finds a catalog tool outside the agent
// with it (mcpserver.Options.Row), over /mcp/agents/{name} and stdio alike.
func (c *Catalog) Row(ctx context.Context, name string) (*plugins.Plugin, error) {
	p, err := c.Plugin(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return p, err
}

// MCPTool returns the catalog row calling tool on the MCP server mcpID —
// an enabled one, else a disabled one (a call of the tool is refused as
// that row is, never let through as no row's); of several, the oldest —
// or an error wrapping store.ErrNotFound: the row a call of that tool
// is, whichever route named it (the MCP proxy names the server and the
// tool, never the row).
func (c *Catalog) MCPTool(ctx context.Context, mcpID, tool string) (*plugins.Plugin, error) {
	s, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	p, ok := s.byTool[mcpTool{mcpID, tool}]
	if !ok {
		return nil, fmt.Errorf("no plugin calls tool %q of MCP server %q: %w", tool, mcpID, store.ErrNotFound)
	}
	return p, nil
}

// EnabledPlugins returns the enabled plugins in name order. The slice and
// the plugins are shared: callers must not modify them.
func (c *Catalog) EnabledPlugins(ctx context.Context) ([]*plugins.Plugin, error) {
	s, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	return s.enabled, nil
}

// RowsAt is EnabledPlugins, Plugins, the rows left out that decode
// (never served: a protocol the engine refuses, RuoYi's SQL; their keys
// are still the catalog's, review77) and the counter value they are of:
// older than the counter while a reload fails and the snapshot held is
// served, so that what is built on them (auth.Catalog's index) is read
// again once the catalog reloads, not kept as the counter's.
func (c *Catalog) RowsAt(ctx context.Context) (enabled, all, unserved []*plugins.Plugin, version int64, err error) {
	s, err := c.current(ctx)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	return s.enabled, s.all, s.unserved, s.version, nil
}

// Plugins returns every plugin, enabled or not, in name order: what a
// rule about a tool's records and waiting calls, which outlive its
// disabling, is decided over. Shared as EnabledPlugins' are.
func (c *Catalog) Plugins(ctx context.Context) ([]*plugins.Plugin, error) {
	s, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	return s.all, nil
}

// Version is the counter value of the catalog held (0: none loaded yet).
func (c *Catalog) Version() int64 {
	if s := c.snap.Load(); s != nil {
		return s.version
	}
	return 0
}
