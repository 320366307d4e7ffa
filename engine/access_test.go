package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/plugins"
)

// heldSource is a database source of users' permission strings held in
// memory, changed by the test (the source is not under test: the
// decision's access step is).
type heldSource struct {
	mu    sync.Mutex
	users map[int64][]string
	err   error
}

func (s *heldSource) Held(_ context.Context, user int64) (access.Held, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	return access.HeldOf(s.users[user]...), nil
}

func (s *heldSource) set(user int64, perms ...string) {
	s.mu.Lock()
	s.users[user] = perms
	s.mu.Unlock()
}

// TestAccessDecision is the decision's access step (issue 46): who owns
// the work × the plugin as given (a row, an inline copy bound to it, an
// inline plugin named like it but unbound, an inline plugin of no row) ×
// the mode × what the user holds → sent, or refused before anything
// reaches the upstream, recorded with its own outcome and counted.
func TestAccessDecision(t *testing.T) {
	up := newUpstream(t, nil)
	const guarded = `{"name":"users","description":"Lists users.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/users"},"auth_config":{"type":"bearer","token":"TOKEN"}PERMS}`
	const free = `{"name":"weather","description":"Weather.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/weather"}PERMS}`
	doc := func(d, perms string) *plugins.Plugin {
		return mustPlugin(t, strings.Replace(d, "PERMS", perms, 1), up.URL)
	}
	row, rowFree := doc(guarded, `,"perms":["system:user:list"]`), doc(free, "")
	copyOf := doc(guarded, `,"perms":["system:user:list"]`) // an inline copy: bound to the row when stored keys are used
	unguarded := doc(guarded, "")                           // named like the row, perms left out
	// probe is named like the row and reads its stored key, but differs
	// in execution: binding refuses it naming the field it differs in,
	// which must tell nothing of a row its caller may not use.
	probe := mustPlugin(t, strings.Replace(strings.Replace(guarded, "PERMS", "", 1), "/users", "/guess", 1), up.URL)
	ownPerms := mustPlugin(t, `{"name":"own","description":"Own.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/own"},"perms":["own:thing:use"]}`, up.URL)
	payload := map[string]string{"TOKEN": "payload-token-0123456789"}

	const clerk, admin, nobody = 7, 1, 0
	send := ""
	tests := []struct {
		name    string
		mode    access.Mode
		owner   Owner
		plugin  *plugins.Plugin
		inline  bool
		payload map[string]string
		user    int64
		narrow  []access.Held
		policy  confirm.Policy
		down    bool // the database source cannot be read
		want    string
	}{
		{"a row the user holds a perm of", access.ModeOpen, OwnerUser, row, false, nil, admin, nil, "", false, send},
		{"a row the user holds none of", access.ModeOpen, OwnerUser, row, false, nil, clerk, nil, "", false, CodePermissionDenied},
		{"access before confirmation: refused, no person asked", access.ModeOpen, OwnerUser, row, false, nil, clerk, nil, confirm.Always, false, CodePermissionDenied},
		{"the service acting for the user gets the user's perms", access.ModeOpen, OwnerService, row, false, nil, clerk, nil, "", false, CodePermissionDenied},
		{"the administrator acting for the user too", access.ModeOpen, OwnerAdmin, row, false, nil, clerk, nil, "", false, CodePermissionDenied},
		{"user 0 holds nothing", access.ModeOpen, OwnerService, row, false, nil, nobody, nil, "", false, CodePermissionDenied},
		{"a row without perms under open", access.ModeOpen, OwnerUser, rowFree, false, nil, clerk, nil, "", false, send},
		{"a row without perms under perms", access.ModePerms, OwnerUser, rowFree, false, nil, admin, nil, "", false, CodePermissionDenied},
		{"an inline copy bound to the row is the row", access.ModeOpen, OwnerUser, copyOf, true, nil, clerk, nil, "", false, CodePermissionDenied},
		{"an unbound inline plugin named like the row, perms left out", access.ModeOpen, OwnerUser, unguarded, true, payload, clerk, nil, "", false, CodePermissionDenied},
		{"the service's unbound copy too", access.ModeOpen, OwnerService, unguarded, true, payload, clerk, nil, "", false, CodePermissionDenied},
		{"the administrator's unbound copy too", access.ModeOpen, OwnerAdmin, unguarded, true, payload, clerk, nil, "", false, CodePermissionDenied},
		{"an unbound copy named like the row, for a user holding it", access.ModeOpen, OwnerUser, unguarded, true, payload, admin, nil, "", false, send},
		{"a copy of a row the user may not use, differing: refused by access, not by binding", access.ModeOpen, OwnerUser, probe, true, nil, clerk, nil, "", false, CodePermissionDenied},
		{"the service's differing copy for that user too", access.ModeOpen, OwnerService, probe, true, nil, clerk, nil, "", false, CodePermissionDenied},
		{"a differing copy of a row the user may use: the binding's refusal", access.ModeOpen, OwnerUser, probe, true, nil, admin, nil, "", false, CodeCredentialNotBound},
		{"a user's inline plugin of no row under open", access.ModeOpen, OwnerUser, ownPerms, true, nil, clerk, nil, "", false, send},
		{"a user's inline plugin of no row under perms, whatever it declares", access.ModePerms, OwnerUser, ownPerms, true, nil, admin, nil, "", false, CodePermissionDenied},
		{"the service's inline plugin of no row: its perms judged", access.ModePerms, OwnerService, ownPerms, true, nil, admin, nil, "", false, send},
		{"the service's inline plugin of no row, not held", access.ModePerms, OwnerService, ownPerms, true, nil, clerk, nil, "", false, CodePermissionDenied},
		{"a payload's perms narrow the database's", access.ModeOpen, OwnerService, row, false, nil, admin, []access.Held{access.HeldOf("system:role:list")}, "", false, CodePermissionDenied},
		{"a payload's perms granting it too", access.ModeOpen, OwnerService, row, false, nil, admin, []access.Held{access.HeldOf("system:user:list")}, "", false, send},
		{"a payload's perms never widen", access.ModeOpen, OwnerService, row, false, nil, clerk, []access.Held{access.HeldOf(plugins.AllPerms)}, "", false, CodePermissionDenied},
		{"a source down fails closed", access.ModeOpen, OwnerUser, row, false, nil, admin, nil, "", true, CodePermissionsUnavailable},
		{"a source down refuses a plugin without perms too: it says who may log in", access.ModeOpen, OwnerUser, rowFree, false, nil, admin, nil, "", true, CodePermissionsUnavailable},
		{"user 0 is no one to log in: a source down is not asked", access.ModeOpen, OwnerService, rowFree, false, nil, nobody, nil, "", true, send},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &heldSource{users: map[int64][]string{admin: {plugins.AllPerms}, clerk: {"system:role:list"}}}
			if tt.down {
				src.err = errors.New("the database is down")
			}
			h := newHarness(t)
			h.Catalog = rowCatalog{"users": row, "weather": rowFree}
			h.Credentials = storeFunc(func(context.Context, int64, []string) (map[string]string, error) {
				return map[string]string{"TOKEN": "stored-token-0123456789"}, nil
			})
			h.Access = &access.Checker{Mode: tt.mode, Source: src, Name: access.SourceRuoYi}
			before := len(up.Hits())
			res, err := h.Execute(t.Context(), Call{Plugin: tt.plugin, Inline: tt.inline, Owner: tt.owner, UserID: tt.user,
				Narrow: tt.narrow, Credentials: tt.payload, Policy: tt.policy, Arguments: json.RawMessage(`{"q":"x"}`)})
			code := ""
			if refused, ok := errors.AsType[*RefusedError](err); ok {
				code = refused.Code
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.want && !(tt.want == send && code == CodeConfirmationRequired) {
				t.Fatalf("refusal %q (%v), want %q", code, err, tt.want)
			}
			if sent := len(up.Hits()) > before; sent != (tt.want == send && tt.policy == "") {
				t.Errorf("sent %v", sent)
			}
			if tt.want == CodePermissionDenied {
				d := res.Error.Details.(map[string]any)
				if d["plugin"] != tt.plugin.Name || d["field"] != nil || strings.Contains(res.Error.Message, "system:role:list") ||
					strings.Contains(res.Error.Message, "execution") {
					t.Errorf("the refusal %q %v names more or less than the plugin and its needs", res.Error.Message, d)
				}
			}
			recs := h.flush(t)
			if len(recs) != 1 || tt.want != send && (recs[0].Status != "refused" || recs[0].ErrorClass != tt.want) {
				t.Errorf("records %+v", recs)
			}
		})
	}
}

// TestAccessAtSend: a paused call is decided again when it is finally
// sent, so a permission removed between the pause and the approval stops
// it; nothing reaches the upstream.
func TestAccessAtSend(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"drop","description":"d","parameters":{"type":"object","properties":{"id":{"type":"string"}}},
	  "execution":{"method":"DELETE","base_url":"%s/items/{id}"},"perms":["system:user:remove"]}`, up.URL)
	src := &heldSource{users: map[int64][]string{7: {"system:user:remove"}}}
	h := newHarness(t)
	h.Access = &access.Checker{Source: src, Name: access.SourceRuoYi}
	call := Call{Plugin: p, UserID: 7, Policy: confirm.Consequential, Arguments: json.RawMessage(`{"id":"1"}`)}
	plan, err := h.Decide(t.Context(), call)
	if err != nil || plan.Verdict() != VerdictPerson {
		t.Fatalf("verdict %d: %v", plan.Verdict(), err)
	}
	src.set(7, "system:user:list") // the role lost the permission meanwhile
	call.Approval = &Approval{PendingID: "p1", Digest: plan.Person.Digest, By: "alice"}
	plan, err = h.Decide(t.Context(), call)
	if refused, ok := errors.AsType[*RefusedError](err); !ok || refused.Code != CodePermissionDenied || plan.Verdict() != VerdictRefused {
		t.Fatalf("approved after the permission went: verdict %d, %v", plan.Verdict(), err)
	}
	if _, err := h.Send(t.Context(), plan); err == nil || len(up.Hits()) != 0 {
		t.Fatalf("sent %d: %v", len(up.Hits()), err)
	}
}

// agentSet is the agents of a test, their tools picked from a
// rowCatalog (catalog.Agents' contract: an agent holds catalog rows).
type agentSet struct {
	rows   rowCatalog
	agents map[string]*catalog.Agent
}

func (s *agentSet) Use(_ context.Context, name string) (*catalog.Agent, error) {
	a := s.agents[name]
	switch {
	case a == nil:
		return nil, &catalog.AgentError{Name: name}
	case !a.Enabled():
		return nil, &catalog.AgentError{Name: name, Disabled: true}
	}
	return a, nil
}

func (s *agentSet) Holds(_ context.Context, a *catalog.Agent, name string) (bool, error) {
	row := s.rows[name]
	return row != nil && a.Tools.Selects(row), nil
}

// TestAccessAgentDecision: a call made within an agent is decided at the
// access step: a plugin outside the agent (an inline plugin of no row
// included, whatever its tags), an agent whose perms the user does not
// hold, an unknown or disabled agent are refused before anything is
// sent, each recorded with its own outcome; an engine without an access
// rule refuses a call naming an agent rather than ignore it; and an
// agent disabled between a pause and its approval stops the call.
func TestAccessAgentDecision(t *testing.T) {
	up := newUpstream(t, nil)
	users := mustPlugin(t, `{"name":"users","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"%s/users"}}`, up.URL)
	weather := mustPlugin(t, `{"name":"weather","description":"d","tags":["forecast"],"parameters":{"type":"object"},"execution":{"method":"GET","base_url":"%s/weather"}}`, up.URL)
	tagged := mustPlugin(t, `{"name":"own","description":"d","tags":["forecast"],"parameters":{"type":"object"},"execution":{"method":"DELETE","base_url":"%s/own"}}`, up.URL)
	rows := rowCatalog{"users": users, "weather": weather}
	set := &agentSet{rows: rows, agents: map[string]*catalog.Agent{
		"forecast": {Name: "forecast", Tools: catalog.Selection{Tags: []string{"forecast"}}},
		"locked":   {Name: "locked", Tools: catalog.Selection{Tags: []string{"forecast"}}, Perms: []string{"weather:forecast:use"}},
		"paused":   {Name: "paused", Tools: catalog.Selection{Tags: []string{"forecast"}}, Status: "1"},
	}}
	const send = ""
	for _, tt := range []struct {
		name   string
		agent  string
		plugin *plugins.Plugin
		inline bool
		rule   bool
		want   string
	}{
		{"a tool of the agent", "forecast", weather, false, true, send},
		{"a tool outside the agent", "forecast", users, false, true, CodePermissionDenied},
		{"an inline plugin of no row, tagged like the agent", "forecast", tagged, true, true, CodePermissionDenied},
		{"no agent", "", users, false, true, send},
		{"an agent whose perms the user does not hold", "locked", weather, false, true, CodePermissionDenied},
		{"an unknown agent", "nobody", weather, false, true, catalog.CodeAgentNotFound},
		{"a disabled agent", "paused", weather, false, true, catalog.CodeAgentDisabled},
		{"an agent and no access rule", "forecast", weather, false, false, CodePermissionsUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.Catalog = rows
			if tt.rule {
				h.Access = &access.Checker{Agents: set}
			}
			before := len(up.Hits())
			res, err := h.Execute(t.Context(), Call{Plugin: tt.plugin, Inline: tt.inline, Owner: OwnerService, UserID: 7, Agent: tt.agent,
				Arguments: json.RawMessage(`{}`)})
			code := ""
			if refused, ok := errors.AsType[*RefusedError](err); ok {
				code = refused.Code
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Fatalf("refusal %q (%v), want %q", code, err, tt.want)
			}
			if sent := len(up.Hits()) > before; sent != (tt.want == send) {
				t.Errorf("sent %v", sent)
			}
			if tt.want == CodePermissionDenied && tt.agent != "locked" {
				if d := res.Error.Details.(map[string]any); d["plugin"] != tt.plugin.Name || d["agent"] != tt.agent {
					t.Errorf("details %v: want the plugin and the agent", d)
				}
			}
			recs := h.flush(t)
			if len(recs) != 1 || tt.want != send && (recs[0].Status != "refused" || recs[0].ErrorClass != tt.want) {
				t.Errorf("records %+v", recs)
			}
		})
	}

	t.Run("disabled between the pause and the approval", func(t *testing.T) {
		drop := mustPlugin(t, `{"name":"drop","description":"d","tags":["forecast"],"parameters":{"type":"object"},"execution":{"method":"DELETE","base_url":"%s/drop"}}`, up.URL)
		rows := rowCatalog{"drop": drop}
		agent := &catalog.Agent{Name: "forecast", Tools: catalog.Selection{Tags: []string{"forecast"}}}
		h := newHarness(t)
		h.Catalog = rows
		h.Access = &access.Checker{Agents: &agentSet{rows: rows, agents: map[string]*catalog.Agent{"forecast": agent}}}
		before := len(up.Hits())
		call := Call{Plugin: drop, UserID: 7, Agent: "forecast", Policy: confirm.Consequential, Arguments: json.RawMessage(`{}`)}
		plan, err := h.Decide(t.Context(), call)
		if err != nil || plan.Verdict() != VerdictPerson {
			t.Fatalf("verdict %d: %v", plan.Verdict(), err)
		}
		agent.Status = "1"
		call.Approval = &Approval{PendingID: "p1", Digest: plan.Person.Digest, By: "alice"}
		plan, err = h.Decide(t.Context(), call)
		if refused, ok := errors.AsType[*RefusedError](err); !ok || refused.Code != catalog.CodeAgentDisabled {
			t.Fatalf("approved after the agent was disabled: %v", err)
		}
		if _, err := h.Send(t.Context(), plan); err == nil || len(up.Hits()) != before {
			t.Fatalf("sent %d: %v", len(up.Hits())-before, err)
		}
	})
}

// tokensFunc reads tokens as the test says.
type tokensFunc func(ctx context.Context, user, id int64) (access.Held, error)

func (f tokensFunc) Perms(ctx context.Context, user, id int64) (access.Held, error) {
	return f(ctx, user, id)
}

// TestAccessReadsTheToken (review 73): a call naming its token
// (Call.Token) is decided with the token's perms as Executor.Tokens has
// them at the decision, not as the caller read them: narrowed, revoked,
// unreadable or unreadable by this engine, each refused before
// anything is sent; a token with no fixed perms leaves the call to the
// other sources. Executor.Usable, what a run offers, reads it alike.
func TestAccessReadsTheToken(t *testing.T) {
	up := newUpstream(t, nil)
	row := mustPlugin(t, `{"name":"users","description":"Lists users.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/users"},"perms":["system:user:list"]}`, up.URL)
	const clerk = 7
	for _, tt := range []struct {
		name   string
		tokens Tokens
		narrow []access.Held
		want   string
	}{
		{"the token's perms grant it", tokensFunc(func(context.Context, int64, int64) (access.Held, error) {
			return access.HeldOf("system:user:list"), nil
		}), nil, ""},
		{"narrowed since the caller read it", tokensFunc(func(context.Context, int64, int64) (access.Held, error) {
			return access.HeldOf("system:role:list"), nil
		}), []access.Held{access.HeldOf("system:user:list")}, CodePermissionDenied},
		{"revoked", tokensFunc(func(context.Context, int64, int64) (access.Held, error) { return access.Held{}, nil }), nil, CodePermissionDenied},
		{"no fixed perms: the other sources decide", tokensFunc(func(context.Context, int64, int64) (access.Held, error) { return nil, nil }),
			[]access.Held{access.HeldOf("system:role:list")}, CodePermissionDenied},
		{"unreadable", tokensFunc(func(context.Context, int64, int64) (access.Held, error) {
			return nil, errors.New("the database is down")
		}), nil, CodePermissionsUnavailable},
		{"no reader", nil, nil, CodePermissionsUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.Catalog = rowCatalog{"users": row}
			h.Access = &access.Checker{Mode: access.ModeOpen, Source: &heldSource{users: map[int64][]string{clerk: {plugins.AllPerms}}}, Name: access.SourceRuoYi}
			h.Tokens = tt.tokens
			before := len(up.Hits())
			_, err := h.Execute(t.Context(), Call{Plugin: row, UserID: clerk, Token: 42, Narrow: tt.narrow, Arguments: json.RawMessage(`{"q":"x"}`)})
			code := ""
			if refused, ok := errors.AsType[*RefusedError](err); ok {
				code = refused.Code
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.want || (len(up.Hits()) > before) != (tt.want == "") {
				t.Errorf("refusal %q (%v), sent %v; want %q", code, err, len(up.Hits()) > before, tt.want)
			}
			// What a run offers at a model call (perms 74) agrees: the
			// tool when the call is sent, none when refused, an error
			// when the token cannot be read.
			offered, err := h.Usable(t.Context(), Call{UserID: clerk, Token: 42, Narrow: tt.narrow}, []*plugins.Plugin{row})
			switch {
			case tt.want == CodePermissionsUnavailable:
				if err == nil {
					t.Errorf("Usable offered %v, want an error", offered)
				}
			case err != nil || len(offered) != map[bool]int{true: 1, false: 0}[tt.want == ""]:
				t.Errorf("Usable offered %v (%v), want the tool %v", offered, err, tt.want == "")
			}
		})
	}
}
