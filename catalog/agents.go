package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// Agent is a named, stored selection of tools (issue 46): by plugin
// names, tags and import sources, so that a sync adding an operation
// under a selected tag adds it to the agent. Perms, when given, are
// needed to use the agent (one of them); an agent never grants a tool:
// its tools are always narrowed to what the user may use.
type Agent struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Tools       Selection `json:"tools"`
	Perms       []string  `json:"perms,omitempty"`
	// Status is "0" enabled (the default) or "1" disabled, as RuoYi's
	// columns are.
	Status string `json:"status,omitempty"`
	Remark string `json:"remark,omitempty"`
}

// Limits of an agent's text, those of its columns.
const (
	MaxAgentDescriptionChars = plugins.MaxDescriptionChars
	maxRemarkChars           = 500
)

// Check says what is wrong with a, each problem naming its field.
func (a *Agent) Check() []plugins.FieldError {
	var errs []plugins.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, plugins.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if !plugins.ValidName(a.Name) {
		add("name", "%q must match ^[a-zA-Z0-9_-]{1,64}$ (the plugin name rule)", a.Name)
	}
	if n := utf8.RuneCountInString(a.Description); n > MaxAgentDescriptionChars {
		add("description", "%d characters: at most %d", n, MaxAgentDescriptionChars)
	}
	if n := utf8.RuneCountInString(a.Remark); n > maxRemarkChars {
		add("remark", "%d characters: at most %d", n, maxRemarkChars)
	}
	if a.Status != "" && a.Status != store.StatusEnabled && a.Status != store.StatusDisabled {
		add("status", "%q: expected \"0\" (enabled) or \"1\" (disabled)", a.Status)
	}
	if a.Tools.Empty() {
		add("tools", "select tools by names, tags or sources")
	}
	errs = append(errs, a.Tools.Check("tools.")...)
	return append(errs, plugins.CheckPerms("perms", a.Perms)...)
}

// Enabled reports whether the agent may be used.
func (a *Agent) Enabled() bool { return a.Status != store.StatusDisabled }

// AgentRow maps a onto a sys_ai_agent row.
func AgentRow(a *Agent) (*store.Agent, error) {
	tools, err := json.Marshal(a.Tools)
	if err != nil {
		return nil, fmt.Errorf("encode the tools of agent %q: %w", a.Name, err)
	}
	return &store.Agent{Name: a.Name, Description: a.Description, Tools: tools, Perms: plugins.JoinPerms(a.Perms),
		Status: a.Status, Audit: store.Audit{Remark: a.Remark}}, nil
}

// AgentFromRow maps a row back; a row RuoYi's SQL wrote wrong is an
// error naming the column.
func AgentFromRow(r *store.Agent) (*Agent, error) {
	a := &Agent{Name: r.Name, Description: r.Description, Status: r.Status, Remark: r.Remark}
	if len(r.Tools) > 0 {
		if err := json.Unmarshal(r.Tools, &a.Tools); err != nil {
			return nil, fmt.Errorf("agent %q: tools: %w", r.Name, err)
		}
	}
	perms, err := plugins.SplitPerms(r.Perms)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", r.Name, err)
	}
	a.Perms = perms
	return a, nil
}

// Codes of the errors Agents.Tools returns, as the API answers them.
const (
	CodeAgentNotFound = "agent_not_found" // 404
	CodeAgentDisabled = "agent_disabled"  // 409
)

// AgentError says an agent named in a call cannot be used: it does not
// exist (Code CodeAgentNotFound, wrapping store.ErrNotFound) or is
// disabled.
type AgentError struct {
	Name     string
	Disabled bool
}

func (e *AgentError) Error() string {
	if e.Disabled {
		return fmt.Sprintf("%s: agent %q is disabled (status '1')", CodeAgentDisabled, e.Name)
	}
	return fmt.Sprintf("%s: no agent named %q", CodeAgentNotFound, e.Name)
}

// Code is CodeAgentNotFound or CodeAgentDisabled.
func (e *AgentError) Code() string {
	if e.Disabled {
		return CodeAgentDisabled
	}
	return CodeAgentNotFound
}

func (e *AgentError) Unwrap() error {
	if e.Disabled {
		return nil
	}
	return store.ErrNotFound
}

// AgentSource lists agent rows; *store.Store implements it.
type AgentSource interface {
	ListAgents(ctx context.Context) ([]store.Agent, error)
}

// Agents is a replica's copy of the agents, read again when the agents'
// change counter moves (a trigger bumps it whoever writes: this replica,
// another, RuoYi's SQL), as the catalog follows the plugins'. It is safe
// for concurrent use.
type Agents struct {
	src     AgentSource
	changes Versions
	catalog *Catalog

	mu       sync.Mutex // serializes reloads
	failedAt time.Time  // when the last reload failed (zero once one succeeds), under mu
	snap     atomic.Pointer[agentSnapshot]
}

type agentSnapshot struct {
	version int64
	byName  map[string]*Agent
	list    []*Agent         // by name
	broken  map[string]error // rows that do not read, by name
}

// NewAgents returns the agents of src, whose tools are read from cat.
func NewAgents(src AgentSource, changes Versions, cat *Catalog) *Agents {
	return &Agents{src: src, changes: changes, catalog: cat}
}

func (s *Agents) current(ctx context.Context) (*agentSnapshot, error) {
	want := s.changes.Current().Agents
	if snap := s.snap.Load(); snap != nil && snap.version == want {
		return snap, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.snap.Load()
	if held != nil && (held.version == want || time.Since(s.failedAt) < ReloadRetry) {
		return held, nil // reloaded while this call waited, or failed a moment ago (as the catalog)
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.QueryTimeout)
	rows, err := s.src.ListAgents(lctx)
	cancel()
	if err != nil {
		if held != nil {
			s.failedAt = time.Now()
			return held, nil // the database briefly away: the agents last read
		}
		return nil, err
	}
	s.failedAt = time.Time{}
	snap := &agentSnapshot{version: want, byName: make(map[string]*Agent, len(rows)), broken: map[string]error{}}
	for i := range rows {
		a, err := AgentFromRow(&rows[i])
		if err != nil {
			// Left out of the list; naming it says why.
			snap.broken[rows[i].Name] = err
			s.catalog.logger.WarnContext(ctx, "agent row left out", "agent", rows[i].Name, "err", err)
			continue
		}
		snap.byName[a.Name] = a
		snap.list = append(snap.list, a)
	}
	s.snap.Store(snap)
	return snap, nil
}

// List returns every agent, enabled or not, by name: shared, not to be
// modified.
func (s *Agents) List(ctx context.Context) ([]*Agent, error) {
	snap, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	return snap.list, nil
}

// Get returns the agent called name, enabled or not, or an *AgentError.
func (s *Agents) Get(ctx context.Context, name string) (*Agent, error) {
	snap, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	if err, ok := snap.broken[name]; ok {
		return nil, err
	}
	a, ok := snap.byName[name]
	if !ok {
		return nil, &AgentError{Name: name}
	}
	return a, nil
}

// Use returns the enabled agent called name: one that does not exist,
// or is disabled, is an *AgentError.
func (s *Agents) Use(ctx context.Context, name string) (*Agent, error) {
	a, err := s.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if !a.Enabled() {
		return nil, &AgentError{Name: name, Disabled: true}
	}
	return a, nil
}

// Tools returns the enabled agent's tools: the enabled plugins of the
// catalog it selects, in name order, read as the catalog is now. An
// unknown or disabled agent is an *AgentError.
func (s *Agents) Tools(ctx context.Context, name string) (*Agent, []*plugins.Plugin, error) {
	a, err := s.Use(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	enabled, err := s.catalog.EnabledPlugins(ctx)
	if err != nil {
		return nil, nil, err
	}
	return a, a.Tools.Of(enabled), nil
}

// Holds reports whether a selects the enabled catalog plugin called
// name, judged on the catalog's row (its tags, its import source): an
// agent holds catalog rows only, so a plugin a caller defined itself is
// in an agent only as the row of its name, and its own tags never put
// it there.
func (s *Agents) Holds(ctx context.Context, a *Agent, name string) (bool, error) {
	p, err := s.catalog.Plugin(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return p.Enabled() && a.Tools.Selects(p), nil
}

// View is the catalog as the agent called name selects it, for a server
// of the agent's tools alone (the MCP server of /mcp/agents/{name}).
func (s *Agents) View(name string) *View { return &View{agents: s, name: name} }

// View is one agent's part of the catalog (Agents.View).
type View struct {
	agents *Agents
	name   string
}

// EnabledPlugins are the agent's tools now (Agents.Tools): an unknown or
// disabled agent is an *AgentError.
func (v *View) EnabledPlugins(ctx context.Context) ([]*plugins.Plugin, error) {
	_, ps, err := v.agents.Tools(ctx, v.name)
	return ps, err
}

// Version moves whenever the catalog or an agent changes (both counters
// only grow, so their sum moves when either does).
func (v *View) Version() int64 {
	return v.agents.catalog.Version() + v.agents.changes.Current().Agents
}
