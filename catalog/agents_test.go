package catalog_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

const shopDoc = `openapi: 3.0.3
info: {title: Shop, version: "1"}
paths:
  /items:
    get:
      operationId: listItems
      tags: [items]
      responses: {'200': {description: ok}}
  /orders:
    get:
      operationId: listOrders
      tags: [orders]
      responses: {'200': {description: ok}}
`

// TestAgentTools: an agent's tools are the enabled plugins its selection
// picks by name, tag and import source, read as the catalog is now: a
// sync adding an operation under a selected tag adds it to the agent;
// agents follow their change counter, whoever writes the rows; an unknown
// or disabled agent is a typed error.
func TestAgentTools(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		sync := func(doc string) {
			t.Helper()
			d, err := openapi.Load([]byte(doc), "https://shop.example.com/openapi.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := importer.OpenAPI(ctx, st, "https://shop.example.com/openapi.yaml", d, openapi.Options{BaseURL: "https://shop.example.com"}, false); err != nil {
				t.Fatal(err)
			}
		}
		sync(shopDoc)
		row, err := st.GetPlugin(ctx, "listItems")
		if err != nil || row.SourceID == nil {
			t.Fatalf("imported: %v %v", row, err)
		}
		for _, p := range []*store.Plugin{
			{Name: "weather", ParameterSchema: store.JSON(`{"type":"object"}`), ExecutionConfig: getConfig},
			{Name: "old_weather", Status: store.StatusDisabled, ParameterSchema: store.JSON(`{"type":"object"}`), ExecutionConfig: getConfig},
		} {
			if err := st.CreatePlugin(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range []catalog.Agent{
			{Name: "stock", Tools: catalog.Selection{Tags: []string{"items"}}},
			{Name: "shop", Tools: catalog.Selection{Sources: []int64{*row.SourceID}, Names: []string{"old_weather"}}},
			{Name: "forecast", Tools: catalog.Selection{Names: []string{"weather", "old_weather", "gone"}}, Perms: []string{"weather:forecast:query"}},
			{Name: "paused", Tools: catalog.Selection{Names: []string{"weather"}}, Status: store.StatusDisabled},
		} {
			if errs := a.Check(); errs != nil {
				t.Fatalf("%s: %v", a.Name, errs)
			}
			r, err := catalog.AgentRow(&a)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.CreateAgent(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		changes := store.NewWatcher(st, 0, nil)
		poll := func() {
			t.Helper()
			if _, err := changes.Poll(ctx); err != nil {
				t.Fatal(err)
			}
		}
		poll()
		agents := catalog.NewAgents(st, changes, catalog.New(st, changes, nil))
		tools := func(name string) []string {
			t.Helper()
			_, ps, err := agents.Tools(ctx, name)
			if err != nil {
				t.Fatalf("tools of %s: %v", name, err)
			}
			var out []string
			for _, p := range ps {
				out = append(out, p.Name)
			}
			return out
		}
		for name, want := range map[string][]string{
			"stock":    {"listItems"},
			"shop":     {"listItems", "listOrders"}, // old_weather is disabled
			"forecast": {"weather"},
		} {
			if got := tools(name); !slices.Equal(got, want) {
				t.Errorf("%s: tools %v, want %v", name, got, want)
			}
		}

		// The source grows an operation under the agent's tag.
		sync(strings.Replace(shopDoc, "  /orders:", `  /items/{id}:
    delete:
      operationId: deleteItem
      tags: [items]
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {'204': {description: gone}}
  /orders:`, 1))
		poll()
		if got := tools("stock"); !slices.Equal(got, []string{"deleteItem", "listItems"}) {
			t.Errorf("stock after the sync: %v, want deleteItem added", got)
		}
		if got := tools("shop"); !slices.Equal(got, []string{"deleteItem", "listItems", "listOrders"}) {
			t.Errorf("shop after the sync: %v, want deleteItem added", got)
		}

		// RuoYi's SQL changes an agent: the counter's trigger makes every
		// replica read it again.
		before := changes.Current().Agents
		if _, err := st.DB().ExecContext(ctx, `UPDATE sys_ai_agent SET tools = '{"tags": ["orders"]}' WHERE name = 'stock'`); err != nil {
			t.Fatal(err)
		}
		poll()
		if changes.Current().Agents == before {
			t.Fatal("the agents' counter did not move")
		}
		if got := tools("stock"); !slices.Equal(got, []string{"listOrders"}) {
			t.Errorf("stock after RuoYi's UPDATE: %v", got)
		}

		_, _, err = agents.Tools(ctx, "paused")
		if e, ok := errors.AsType[*catalog.AgentError](err); !ok || e.Code() != catalog.CodeAgentDisabled {
			t.Errorf("a disabled agent: %v, want agent_disabled", err)
		}
		_, _, err = agents.Tools(ctx, "nobody")
		if e, ok := errors.AsType[*catalog.AgentError](err); !ok || e.Code() != catalog.CodeAgentNotFound || !errors.Is(err, store.ErrNotFound) {
			t.Errorf("an unknown agent: %v, want agent_not_found", err)
		}
		if a, err := agents.Get(ctx, "paused"); err != nil || a.Enabled() {
			t.Errorf("Get of a disabled agent: %v %v", a, err)
		}
		if _, err := st.DB().ExecContext(ctx, `UPDATE sys_ai_agent SET perms = 'weather:*' WHERE name = 'forecast'`); err != nil {
			t.Fatal(err)
		}
		poll()
		if _, err := agents.Get(ctx, "forecast"); err == nil || !strings.Contains(err.Error(), "perms") {
			t.Errorf("a row with bad perms: %v, want an error naming perms", err)
		}
		if list, err := agents.List(ctx); err != nil || len(list) != 3 {
			t.Errorf("List: %d agents (%v), want the 3 that read", len(list), err)
		}
	})
}

func TestAgentCheck(t *testing.T) {
	for _, tt := range []struct {
		name  string
		agent catalog.Agent
		want  []string
	}{
		{"good", catalog.Agent{Name: "hr", Tools: catalog.Selection{Tags: []string{"hr"}}, Perms: []string{"hr:leave:list"}, Status: "1"}, nil},
		{"name", catalog.Agent{Name: "h r", Tools: catalog.Selection{Tags: []string{"hr"}}}, []string{"name"}},
		{"no tools", catalog.Agent{Name: "hr"}, []string{"tools"}},
		{"bad selection", catalog.Agent{Name: "hr", Tools: catalog.Selection{Names: []string{"a.b"}, Tags: []string{""}, Sources: []int64{-1}}},
			[]string{"tools.names[0]", "tools.tags[0]", "tools.sources[0]"}},
		{"perms and status", catalog.Agent{Name: "hr", Tools: catalog.Selection{Tags: []string{"hr"}}, Perms: []string{"hr:*"}, Status: "2"}, []string{"status", "perms[0]"}},
		{"description", catalog.Agent{Name: "hr", Tools: catalog.Selection{Tags: []string{"hr"}}, Description: strings.Repeat("d", plugins.MaxDescriptionChars+1)}, []string{"description"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var fields []string
			for _, e := range tt.agent.Check() {
				fields = append(fields, e.Field)
			}
			if !slices.Equal(fields, tt.want) {
				t.Errorf("fields %v, want %v", fields, tt.want)
			}
		})
	}
}
