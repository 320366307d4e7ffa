// Package access decides who may use which tool (issue 46): a user may use
// a plugin when holding at least one of its perms, RuoYi permission
// strings matched exactly as RuoYi matches them (PermissionService.
// hasPermi: the string itself, or "*:*:*", which holds all; no partial
// wildcards). A plugin without perms follows the operator's Mode. The
// strings a user holds come from one database source (RuoYi's tables,
// ruoyi-vue-pro's, or the operator's query; or none) and from what a
// service payload or a per-user token carries: each source is judged on
// its own and all must grant, so a payload or a token narrows what the
// database grants, never widens it. A source that cannot be read refuses
// the call (fails closed) and says so.
//
// The executor's decision point asks Checker.Allowed after binding a call
// to its catalog row; lists and searches ask it of each tool.
package access

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
)

// Environment variables of the rule, which serve reads once the rule is
// wired into the executor.
const (
	// EnvToolAccess is what plugins without perms are: ModeOpen or
	// ModePerms.
	EnvToolAccess = "BLINDEXEC_TOOL_ACCESS"
	// EnvPermissions is where users' permission strings come from:
	// SourceRuoYi, SourceYudao, SourceQuery or SourceNone.
	EnvPermissions = "BLINDEXEC_PERMISSIONS"
	// EnvPermissionsQuery is SourceQuery's SELECT.
	EnvPermissionsQuery = "BLINDEXEC_PERMISSIONS_QUERY"
	// EnvPermissionsDigestQuery is SourceQuery's optional digest: a
	// SELECT whose rows move when a grant the query reads changes.
	EnvPermissionsDigestQuery = "BLINDEXEC_PERMISSIONS_DIGEST_QUERY"
	// EnvPermissionsTTL is how long, in milliseconds, a replica keeps a
	// user's strings read from the database source: the longest a role
	// change made in RuoYi takes to reach a call.
	EnvPermissionsTTL = "BLINDEXEC_PERMISSIONS_TTL_MS"
)

// Mode is what a plugin without perms is (BLINDEXEC_TOOL_ACCESS).
type Mode string

const (
	// ModeOpen: usable by every user, as before issue 46 (the default, so
	// that an upgraded deployment changes nothing).
	ModeOpen Mode = "open"
	// ModePerms: usable by no user until an administrator gives it perms.
	ModePerms Mode = "perms"
)

// Codes of the errors Allowed returns, as the API and MCP answer them.
const (
	CodeDenied      = "permission_denied"
	CodeUnavailable = "permissions_unavailable"
)

// Subject is whom a call acts for.
type Subject struct {
	// User is the user id; 0 is no user, who holds no permission.
	User int64
	// Narrow are further sources of the user's strings, each judged on its
	// own: a service payload's user.permissions (RuoYi's
	// LoginUser.getPermissions()), a per-user token's fixed strings
	// (HeldOf them once per request). An empty set holds nothing.
	Narrow []Held
	// Agent, when set, names the agent the call or the list is within:
	// the subject must hold the agent's perms, and only the agent's tools
	// are usable, each still judged as without it (an agent never grants
	// a tool).
	Agent string
}

// Held is the set of permission strings one source grants a user.
type Held map[string]struct{}

// HeldOf makes the set of perms.
func HeldOf(perms ...string) Held {
	h := make(Held, len(perms))
	for _, p := range perms {
		h[p] = struct{}{}
	}
	return h
}

// Grants reports whether h holds one of needs, or AllPerms, RuoYi's
// PermissionService.hasPermissions exactly: set membership, nothing
// partial.
func (h Held) Grants(needs []string) bool {
	if _, all := h[plugins.AllPerms]; all {
		return true
	}
	for _, n := range needs {
		if _, ok := h[n]; ok {
			return true
		}
	}
	return false
}

// notUser is the one string of what a source that knows who may log in
// (RuoYi's tables, ruoyi-vue-pro's) holds for a user it would not log in:
// missing, disabled, deleted (yudao: of a tenant refused too). No
// permission string holds a NUL, so it grants nothing; it tells such a
// user from one who holds no permission.
const notUser = "\x00not a user"

// NotUser is what a source holds for a user it would not log in.
func NotUser() Held { return HeldOf(notUser) }

// LoggedOut reports whether h is NotUser's: the source would not log its
// user in.
func (h Held) LoggedOut() bool {
	_, out := h[notUser]
	return out
}

// Source reads the permission strings a user holds in one place: RuoYi's
// tables, ruoyi-vue-pro's, the operator's query.
type Source interface {
	Held(ctx context.Context, user int64) (Held, error)
}

// DeniedError refuses a plugin (or an agent) to a user: it names it and
// the permissions it needs, one of which suffices, and nothing of what
// the user holds. Needs is empty for a plugin without perms under
// ModePerms, and for a plugin outside the agent named (Plugin and Agent
// both set).
type DeniedError struct {
	Plugin string
	Agent  string // alone: the agent's perms are not held
	Needs  []string
	// Login names the source that would not log the user in, for a
	// plugin without perms (Needs empty) refused for that alone.
	Login string
}

func (e *DeniedError) Error() string {
	switch {
	case e.Agent != "" && e.Plugin != "":
		return fmt.Sprintf("%s: plugin %q is not among the tools of agent %q", CodeDenied, e.Plugin, e.Agent)
	case e.Agent != "":
		return fmt.Sprintf("%s: agent %q needs one of the permissions %s", CodeDenied, e.Agent, strings.Join(e.Needs, ", "))
	}
	if e.Login != "" {
		return fmt.Sprintf("%s: plugin %q is for users %s=%s would log in, and it would not log this one in (missing, disabled or deleted)", CodeDenied, e.Plugin, EnvPermissions, e.Login)
	}
	if len(e.Needs) == 0 {
		return fmt.Sprintf("%s: plugin %q has no perms, and %s=%s makes such plugins usable by no one until an administrator gives them perms", CodeDenied, e.Plugin, EnvToolAccess, ModePerms)
	}
	return fmt.Sprintf("%s: plugin %q needs one of the permissions %s", CodeDenied, e.Plugin, strings.Join(e.Needs, ", "))
}

// Code is CodeDenied.
func (e *DeniedError) Code() string { return CodeDenied }

// UnavailableError says the database source could not be read: the call
// is refused rather than opened.
type UnavailableError struct {
	Source string
	Err    error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s: the permissions of %s=%s could not be read, so the call is refused: %v", CodeUnavailable, EnvPermissions, e.Source, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Code is CodeUnavailable.
func (e *UnavailableError) Code() string { return CodeUnavailable }

// Agents finds the agents a subject names (*catalog.Agents).
type Agents interface {
	// Use returns the enabled agent called name, else a
	// *catalog.AgentError (unknown: agent_not_found; disabled:
	// agent_disabled).
	Use(ctx context.Context, name string) (*catalog.Agent, error)
	// Holds reports whether a selects the enabled catalog plugin called
	// name.
	Holds(ctx context.Context, a *catalog.Agent, name string) (bool, error)
}

// Checker is the rule. The zero Checker is ModeOpen with no database
// source (SourceNone) and no agents. It is safe for concurrent use when
// its Source and Agents are.
type Checker struct {
	// Mode is what plugins without perms are; "" is ModeOpen.
	Mode Mode
	// Source is the database source, nil for SourceNone; Name names it
	// in errors.
	Source Source
	Name   string
	// Directory names users and the roles granting a permission, when
	// the source knows them (SourceRuoYi); nil otherwise.
	Directory Directory
	// Agents resolve Subject.Agent; nil: a subject naming an agent is
	// refused (ErrNoAgents), never let through unnarrowed.
	Agents Agents

	// ProbeEvery is how long Readable keeps an answer
	// (DefaultProbeEvery when 0).
	ProbeEvery time.Duration

	memo  usableMemo // UsableSet's
	probe probeMemo  // Readable's
}

// ErrNoAgents refuses a subject naming an agent where no agents are
// kept (Checker.Agents nil).
var ErrNoAgents = errors.New("this engine keeps no agents")

// agent returns sub's agent, nil when it names none, after checking that
// it exists, is enabled and, unless waived, that sub holds its perms
// (judged like a plugin's, every source on its own). An unreadable
// catalog is an *UnavailableError: the call is refused, not opened.
func (c *Checker) agent(ctx context.Context, sub Subject, waived bool) (*catalog.Agent, error) {
	if sub.Agent == "" {
		return nil, nil
	}
	if c.Agents == nil {
		return nil, &UnavailableError{Source: "agents", Err: ErrNoAgents}
	}
	a, err := c.Agents.Use(ctx, sub.Agent)
	if err != nil {
		if _, ok := errors.AsType[*catalog.AgentError](err); ok {
			return nil, err
		}
		return nil, &UnavailableError{Source: "agents", Err: err}
	}
	if waived {
		return a, nil
	}
	if err := c.AgentAllowed(ctx, sub, a.Name, a.Perms); err != nil {
		return nil, err
	}
	return a, nil
}

// UseAgent returns the agent sub names when sub may use it: it exists
// (else a *catalog.AgentError, agent_not_found), is enabled (else
// agent_disabled) and sub holds one of its perms (else a *DeniedError
// naming the agent). What an entry point serving one agent (its MCP
// server) asks before it serves anything.
func (c *Checker) UseAgent(ctx context.Context, sub Subject) (*catalog.Agent, error) {
	return c.agent(ctx, sub, false)
}

// within reports whether agent a holds p (a nil a: no agent, every
// plugin).
func (c *Checker) within(ctx context.Context, a *catalog.Agent, p *plugins.Plugin) (bool, error) {
	if a == nil {
		return true, nil
	}
	in, err := c.Agents.Holds(ctx, a, p.Name)
	if err != nil {
		return false, &UnavailableError{Source: "agents", Err: err}
	}
	return in, nil
}

// Allowed returns nil when sub may use p, a *DeniedError when not (p
// outside sub's agent included), a *catalog.AgentError when sub's agent
// does not exist or is disabled, and an *UnavailableError when the
// database source could not be read (only asked for plugins with perms,
// and never for user 0).
func (c *Checker) Allowed(ctx context.Context, sub Subject, p *plugins.Plugin) error {
	a, err := c.agent(ctx, sub, false)
	if err != nil {
		return err
	}
	if in, err := c.within(ctx, a, p); err != nil || !in {
		return cmp.Or(err, error(&DeniedError{Plugin: p.Name, Agent: sub.Agent}))
	}
	return c.allowed(ctx, sub, p)
}

// allowed is Allowed without the agent.
func (c *Checker) allowed(ctx context.Context, sub Subject, p *plugins.Plugin) error {
	if len(p.Perms) == 0 {
		if c.Mode == ModePerms {
			return &DeniedError{Plugin: p.Name}
		}
		if !c.asksLogin(sub) {
			return nil
		}
		held, err := c.Source.Held(ctx, sub.User)
		if err != nil {
			return &UnavailableError{Source: c.Name, Err: err}
		}
		if held.LoggedOut() {
			return &DeniedError{Plugin: p.Name, Login: c.Name}
		}
		return nil
	}
	return c.holds(ctx, sub, &DeniedError{Plugin: p.Name, Needs: p.Perms})
}

// asksLogin reports whether a plugin without perms asks the database
// source about sub's user: a user RuoYi's or yudao's tables would not log
// in (missing, disabled, deleted) uses no tool, as that user could not
// use RuoYi, so that a user disabled there loses every tool with the
// permissions, within one TTL. The operator's query knows strings only.
func (c *Checker) asksLogin(sub Subject) bool {
	return sub.User > 0 && c.Source != nil && (c.Name == SourceRuoYi || c.Name == SourceYudao)
}

// AgentAllowed is Allowed for an agent named name that needs one of
// perms: an agent without perms is for every user whatever the Mode (it
// never grants a tool: its tools are narrowed by Allowed each).
func (c *Checker) AgentAllowed(ctx context.Context, sub Subject, name string, perms []string) error {
	if len(perms) == 0 {
		return nil
	}
	return c.holds(ctx, sub, &DeniedError{Agent: name, Needs: perms})
}

// holds returns nil when every source grants sub one of denied.Needs,
// else denied (or an *UnavailableError).
func (c *Checker) holds(ctx context.Context, sub Subject, denied *DeniedError) error {
	if !c.narrowed(sub, denied.Needs) {
		return denied
	}
	if c.Source == nil {
		return nil
	}
	held, err := c.Source.Held(ctx, sub.User)
	if err != nil {
		return &UnavailableError{Source: c.Name, Err: err}
	}
	if !held.Grants(denied.Needs) {
		return denied
	}
	return nil
}

// narrowed reports whether sub is someone with a source of strings and
// every source besides the database's grants one of needs: the database
// source is asked only then.
func (c *Checker) narrowed(sub Subject, needs []string) bool {
	if sub.User <= 0 || c.Source == nil && sub.Narrow == nil {
		return false // no one, or no source: nothing is held
	}
	for _, n := range sub.Narrow {
		if !n.Grants(needs) {
			return false
		}
	}
	return true
}

// Within returns those of ps the agent called name holds, in order, for
// a caller who is no user (the service, the administrator): the agent
// is resolved as for Allowed (unknown or disabled: a
// *catalog.AgentError), its perms not asked. An empty name is ps.
func (c *Checker) Within(ctx context.Context, name string, ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
	if name == "" {
		return ps, nil
	}
	a, err := c.agent(ctx, Subject{Agent: name}, true)
	if err != nil {
		return nil, err
	}
	out := make([]*plugins.Plugin, 0, len(ps))
	for _, p := range ps {
		in, err := c.within(ctx, a, p)
		if err != nil {
			return nil, err
		}
		if in {
			out = append(out, p)
		}
	}
	return out, nil
}

// Usable returns those of ps sub may use, in order, by the rule of
// Allowed: what every list and search shows a user (a tool it may not
// use is absent, not merely refused), within sub's agent when it names
// one (an agent it may not use, or that does not exist or is disabled,
// is Allowed's error: the list is refused). The user's strings are read
// once (cached by the source): no database round trip per tool. A source
// that cannot be read is an *UnavailableError when some plugin has
// perms: the list is refused, not opened.
func (c *Checker) Usable(ctx context.Context, sub Subject, ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
	a, err := c.agent(ctx, sub, false)
	if err != nil {
		return nil, err
	}
	out := make([]*plugins.Plugin, 0, len(ps))
	if err := c.decide(ctx, sub, a, ps, nil, func(i int) { out = append(out, ps[i]) }); err != nil {
		return nil, err
	}
	return out, nil
}

// decide calls keep with the position of each of ps sub may use, in
// order, within agent a (nil: every plugin): Allowed's rule, the user's
// strings being held, or read from the source at the first plugin that
// needs them when held is nil.
func (c *Checker) decide(ctx context.Context, sub Subject, a *catalog.Agent, ps []*plugins.Plugin, held Held, keep func(i int)) error {
	read := held != nil
	readHeld := func() error {
		if read {
			return nil
		}
		var err error
		if held, err = c.Source.Held(ctx, sub.User); err != nil {
			return &UnavailableError{Source: c.Name, Err: err}
		}
		read = true
		return nil
	}
	for i, p := range ps {
		if in, err := c.within(ctx, a, p); err != nil {
			return err
		} else if !in {
			continue
		}
		switch {
		case len(p.Perms) == 0:
			if c.Mode == ModePerms {
				continue
			}
			if c.asksLogin(sub) {
				if err := readHeld(); err != nil {
					return err
				}
				if held.LoggedOut() {
					continue
				}
			}
		case !c.narrowed(sub, p.Perms):
			continue
		case c.Source != nil:
			if err := readHeld(); err != nil {
				return err
			}
			if !held.Grants(p.Perms) {
				continue
			}
		}
		keep(i)
	}
	return nil
}
