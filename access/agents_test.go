package access_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// agentCatalog stores three plugins — leave (perms hr:leave:list, tag
// hr), holidays (no perms, tag hr), weather (no perms, no tag) — and
// three agents: hr (tag hr, no perms), hr_lead (tag hr, perms
// hr:agent:use) and paused (disabled); it returns them read by the
// catalog.
func agentCatalog(t *testing.T, st *store.Store) (*catalog.Agents, *store.Watcher, map[string]*plugins.Plugin) {
	t.Helper()
	ctx := context.Background()
	for _, doc := range []string{
		`{"name":"leave","description":"d","tags":["hr"],"perms":["hr:leave:list"],"parameters":{"type":"object"},"execution":{"method":"GET","base_url":"https://hr.example.com/leave"}}`,
		`{"name":"holidays","description":"d","tags":["hr"],"parameters":{"type":"object"},"execution":{"method":"GET","base_url":"https://hr.example.com/holidays"}}`,
		`{"name":"weather","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"https://weather.example.com"}}`,
	} {
		p, err := plugins.ParseJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		row, err := catalog.RowFromPlugin(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreatePlugin(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []catalog.Agent{
		{Name: "hr", Tools: catalog.Selection{Tags: []string{"hr"}}},
		{Name: "hr_lead", Tools: catalog.Selection{Tags: []string{"hr"}}, Perms: []string{"hr:agent:use"}},
		{Name: "paused", Tools: catalog.Selection{Tags: []string{"hr"}}, Status: store.StatusDisabled},
	} {
		row, err := catalog.AgentRow(&a)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateAgent(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	changes := store.NewWatcher(st, 0, nil)
	if _, err := changes.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(st, changes, nil)
	enabled, err := cat.EnabledPlugins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*plugins.Plugin{}
	for _, p := range enabled {
		byName[p.Name] = p
	}
	return catalog.NewAgents(st, changes, cat), changes, byName
}

// TestAgentRule: a subject naming an agent may use a plugin when the
// agent exists, is enabled, the subject holds the agent's perms, the
// agent holds the plugin as a catalog row (a plugin of no row is in no
// agent, whatever its own tags) and the plugin's own rule allows it; an
// agent never grants a tool. Usable and Within list by the same rule.
func TestAgentRule(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		agents, changes, ps := agentCatalog(t, st)
		inline, err := plugins.ParseJSON([]byte(`{"name":"inline_hr","description":"d","tags":["hr"],"parameters":{"type":"object"},"execution":{"method":"GET","base_url":"https://hr.example.com/x"}}`))
		if err != nil {
			t.Fatal(err)
		}
		ps["inline_hr"] = inline
		c := &access.Checker{Agents: agents}
		held := func(perms ...string) []access.Held { return []access.Held{access.HeldOf(perms...)} }
		const (
			ok       = ""
			denied   = "denied"
			outside  = "outside"
			notFound = catalog.CodeAgentNotFound
			disabled = catalog.CodeAgentDisabled
		)
		for _, tt := range []struct {
			agent, plugin string
			user          int64
			holds         []access.Held
			want          string
		}{
			{"", "weather", 2, held(), ok},
			{"hr", "weather", 2, held(), outside},
			{"hr", "holidays", 2, held(), ok},
			{"hr", "holidays", 0, nil, ok}, // an agent without perms is for everyone
			{"hr", "leave", 2, held("hr:leave:list"), ok},
			{"hr", "leave", 2, held("hr:agent:use"), denied},          // the agent grants nothing
			{"hr", "leave", 2, held("*:*:*"), ok},                     // RuoYi's all
			{"hr", "inline_hr", 2, held("*:*:*"), outside},            // its own tag does not put it in
			{"hr_lead", "holidays", 2, held("hr:leave:list"), denied}, // the agent's perms
			{"hr_lead", "holidays", 2, held("hr:agent:use"), ok},
			{"hr_lead", "leave", 2, held("hr:agent:use"), denied},
			{"hr_lead", "leave", 2, held("hr:agent:use", "hr:leave:list"), ok},
			{"hr_lead", "holidays", 0, nil, denied},
			{"paused", "holidays", 2, held("*:*:*"), disabled},
			{"nobody", "holidays", 2, held("*:*:*"), notFound},
		} {
			t.Run(fmt.Sprintf("%s %s %d %v", tt.agent, tt.plugin, tt.user, tt.holds), func(t *testing.T) {
				err := c.Allowed(ctx, access.Subject{User: tt.user, Narrow: tt.holds, Agent: tt.agent}, ps[tt.plugin])
				d, isDenied := errors.AsType[*access.DeniedError](err)
				ae, isAgent := errors.AsType[*catalog.AgentError](err)
				switch tt.want {
				case ok:
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
				case outside:
					if !isDenied || d.Plugin != tt.plugin || d.Agent != tt.agent || d.Code() != access.CodeDenied {
						t.Fatalf("%v, want the plugin outside the agent", err)
					}
				case denied:
					if !isDenied || d.Agent != "" && d.Plugin != "" {
						t.Fatalf("%v, want permission_denied", err)
					}
				default:
					if !isAgent || ae.Code() != tt.want {
						t.Fatalf("%v, want %s", err, tt.want)
					}
				}
				// The list agrees with the call.
				usable, err := c.Usable(ctx, access.Subject{User: tt.user, Narrow: tt.holds, Agent: tt.agent}, []*plugins.Plugin{ps[tt.plugin]})
				switch tt.want {
				case ok, outside, denied:
					if _, agentRefused := errors.AsType[*access.DeniedError](err); agentRefused && tt.want == denied {
						return // the agent itself refused: the list is refused too
					}
					if err != nil || (len(usable) == 1) != (tt.want == ok) {
						t.Errorf("Usable: %v %v, disagrees with Allowed", usable, err)
					}
				default:
					if ae, ok := errors.AsType[*catalog.AgentError](err); !ok || ae.Code() != tt.want {
						t.Errorf("Usable: %v, want %s", err, tt.want)
					}
				}
			})
		}

		all := []*plugins.Plugin{ps["holidays"], ps["leave"], ps["weather"], inline}
		names := func(ps []*plugins.Plugin) []string {
			var out []string
			for _, p := range ps {
				out = append(out, p.Name)
			}
			return out
		}
		if got, err := c.Within(ctx, "hr_lead", all); err != nil || !slices.Equal(names(got), []string{"holidays", "leave"}) {
			t.Errorf("Within hr_lead, for the service: %v %v", names(got), err)
		}
		if _, err := c.Within(ctx, "paused", all); err == nil {
			t.Error("Within a disabled agent: no error")
		}
		if got, err := c.Within(ctx, "", all); err != nil || len(got) != len(all) {
			t.Errorf("Within no agent: %v %v", names(got), err)
		}
		if _, err := c.UseAgent(ctx, access.Subject{User: 2, Narrow: held("hr:leave:list"), Agent: "hr_lead"}); err == nil {
			t.Error("UseAgent without the agent's perms: no error")
		}
		if a, err := c.UseAgent(ctx, access.Subject{User: 2, Narrow: held("hr:agent:use"), Agent: "hr_lead"}); err != nil || a.Name != "hr_lead" {
			t.Errorf("UseAgent: %v %v", a, err)
		}

		// The set a search asks is the list, and follows the agent: an
		// agent changed selects anew (its reload is another agent).
		sub := access.Subject{User: 2, Narrow: held("*:*:*"), Agent: "hr"}
		catalogTools := []*plugins.Plugin{ps["holidays"], ps["leave"], ps["weather"]}
		inSet := func() []string {
			s, err := c.UsableSet(ctx, sub, catalogTools)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for i, p := range catalogTools {
				if s.Has(i) {
					out = append(out, p.Name)
				}
			}
			return out
		}
		if got := inSet(); !slices.Equal(got, []string{"holidays", "leave"}) {
			t.Errorf("the set of hr: %v", got)
		}
		row, err := catalog.AgentRow(&catalog.Agent{Name: "hr", Tools: catalog.Selection{Names: []string{"weather"}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.UpdateAgent(ctx, row); err != nil {
			t.Fatal(err)
		}
		if _, err := changes.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		if got := inSet(); !slices.Equal(got, []string{"weather"}) {
			t.Errorf("the set of hr once it selects weather alone: %v (the memo outlived the agent)", got)
		}

		// No agents kept: a subject naming one is refused, not let through.
		err = (&access.Checker{}).Allowed(ctx, access.Subject{User: 2, Agent: "hr"}, ps["holidays"])
		if _, ok := errors.AsType[*access.UnavailableError](err); !ok || !errors.Is(err, access.ErrNoAgents) {
			t.Errorf("no agents kept: %v, want permissions_unavailable", err)
		}
	})
}
