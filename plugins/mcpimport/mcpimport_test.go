package mcpimport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine/egress/egresstest"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/mcpimport"
	"github.com/blindexec/blindexec/store"
)

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{"rb.answer": "rb_answer", "a b/c": "a_b_c", "ok-name_1": "ok-name_1", "": "tool", "工具": "______"} {
		if got := mcpimport.SanitizeName(in); got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParametersSchema(t *testing.T) {
	up := mcptest.New(t)
	reg := &store.MCPServer{ID: "s1", Name: "s", Transport: store.TransportStreamableHTTP, URL: up.Endpoint}
	tools := listTools(t, up, reg)
	byName := map[string]*sdk.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}

	params, warnings, err := mcpimport.Parameters(byName["create_order"].InputSchema, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := string(params)
	if strings.Contains(s, `"$defs":`) || strings.Contains(s, `"$ref":`) || !strings.Contains(s, `"city"`) || !strings.Contains(s, `"sku"`) {
		t.Errorf("create_order parameters = %s, want $defs inlined and removed", s)
	}
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "broken") }) {
		t.Errorf("warnings = %q, want the unresolvable property degraded", warnings)
	}

	params, _, err = mcpimport.Parameters(byName["tree"].InputSchema, 0)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	json.Unmarshal(params, &tree)
	root := tree["properties"].(map[string]any)["root"].(map[string]any)
	if root["type"] != "object" || root["properties"] == nil {
		t.Fatalf("tree root = %v", root)
	}
	// The cycle Node → children → Node is cut: somewhere below, a node
	// keeps its type and loses its properties.
	if strings.Contains(string(params), `"$ref":`) || strings.Count(string(params), `"label"`) > 3 {
		t.Errorf("tree parameters = %s, want the cycle pruned within depth 3", params)
	}
}

// TestParametersEmptyAndWrapped: an MCP tool's empty inputSchema becomes an
// object, the only place where a type is forced; nested schemas keep theirs.
func TestParametersEmptyAndWrapped(t *testing.T) {
	for in, want := range map[string]string{
		`{}`: `{"type":"object"}`,
		`{"type":"object","properties":{"sort":{"allOf":[{"$ref":"#/$defs/Sort"}],"default":"name"}},"$defs":{"Sort":{"enum":["name","date"],"type":"string"}}}`: `{"properties":{"sort":{"default":"name","enum":["name","date"],"type":"string"}},"type":"object"}`,
	} {
		var v any
		json.Unmarshal([]byte(in), &v)
		got, _, err := mcpimport.Parameters(v, 0)
		if err != nil || string(got) != want {
			t.Errorf("Parameters(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

func listTools(t *testing.T, up *mcptest.Server, rows ...*store.MCPServer) []*sdk.Tool {
	t.Helper()
	st := testdb.Open(t, store.DialectSQLite)
	for _, r := range rows {
		c := *r
		if err := st.CreateMCPServer(context.Background(), &c); err != nil {
			t.Fatal(err)
		}
	}
	m := mcp.NewManager(st, egresstest.Client(t))
	defer m.Close()
	tools, err := m.Tools(context.Background(), rows[0].ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// TestImportSync: import, re-import unchanged, then a changed server;
// names sanitized and prefixed on collision; on both databases.
func TestImportSync(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		up := mcptest.New(t)
		srv := &store.MCPServer{Name: "runbook", Transport: store.TransportStreamableHTTP, URL: up.Endpoint,
			AuthConfig: store.JSON(`{"type":"api_key","mapping":[{"source":"rb_key","target":"X-Api-Key"}]}`)}
		if err := st.CreateMCPServer(ctx, srv); err != nil {
			t.Fatal(err)
		}
		// A hand-written plugin owns "echo": the import must not take it.
		hand, _ := store.RowFromPlugin(&plugins.Plugin{Name: "echo", Description: "mine", Parameters: json.RawMessage(`{"type":"object"}`),
			Execution: plugins.Execution{Method: "GET", BaseURL: "https://example.com"}})
		if err := st.CreatePlugin(ctx, hand); err != nil {
			t.Fatal(err)
		}
		m := mcp.NewManager(st, egresstest.Client(t))
		defer m.Close()
		creds := map[string]string{"rb_key": "k-0123456789"}
		sync := func() *mcpimport.Report {
			t.Helper()
			tools, err := m.Tools(ctx, srv.ID, creds, true)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := mcpimport.Import(ctx, st, srv, tools, mcpimport.Options{By: "admin"})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}

		rep := sync()
		wantAdded := []string{"create_order", "fail", "generate_disease_treatment_plan", "rb_answer", "runbook_echo", "slow", "tree"}
		if !slices.Equal(rep.Added, wantAdded) || len(rep.Failed) != 0 {
			t.Fatalf("first import: %+v, want added %v", rep, wantAdded)
		}
		row, err := st.GetPlugin(ctx, "rb_answer")
		if err != nil {
			t.Fatal(err)
		}
		p, _ := row.ToPlugin()
		if p.Execution.Type != plugins.TypeMCP || p.Execution.MCPID != srv.ID || p.Execution.ToolName != "rb.answer" ||
			!slices.Equal(p.RequiredCredentials, []string{"rb_key"}) || p.AuthConfig.Type != plugins.AuthAPIKey {
			t.Errorf("rb_answer = %+v", p)
		}
		if h, _ := st.GetPlugin(ctx, "echo"); h.Description != "mine" {
			t.Errorf("the hand-written echo was overwritten: %+v", h)
		}

		rep = sync()
		if len(rep.Unchanged) != len(wantAdded) || len(rep.Added)+len(rep.Updated)+len(rep.Disabled) != 0 {
			t.Errorf("re-import of the same tools: %+v, want all unchanged", rep)
		}
		again, _ := st.GetPlugin(ctx, "rb_answer")
		if !again.UpdateTime.Equal(row.UpdateTime) || *again.ContentHash != *row.ContentHash {
			t.Errorf("an unchanged plugin was written")
		}

		// The server changes: a description, a removal, an addition.
		up.AddTool("fail", "Fails differently.", `{"type":"object"}`, nil)
		up.MCP.RemoveTools("slow")
		up.AddTool("new.tool", "New.", `{"type":"object","properties":{"x":{"type":"string"}}}`, nil)
		rep = sync()
		if !slices.Equal(rep.Added, []string{"new_tool"}) || !slices.Equal(rep.Updated, []string{"fail"}) || !slices.Equal(rep.Disabled, []string{"slow"}) {
			t.Errorf("sync after changes: %+v", rep)
		}
		if r, _ := st.GetPlugin(ctx, "slow"); r.Status != store.StatusDisabled {
			t.Errorf("removed tool's plugin status = %q, want disabled", r.Status)
		}
		if rep = sync(); len(rep.Disabled)+len(rep.Updated)+len(rep.Added) != 0 {
			t.Errorf("second sync after changes: %+v, want nothing to do", rep)
		}

		// It comes back: enabled again.
		up.AddTool("slow", "Back.", `{"type":"object"}`, nil)
		if rep = sync(); !slices.Equal(rep.Updated, []string{"slow"}) {
			t.Errorf("sync after comeback: %+v", rep)
		}
		if r, _ := st.GetPlugin(ctx, "slow"); r.Status != store.StatusEnabled {
			t.Errorf("returned tool's plugin status = %q, want enabled", r.Status)
		}

		// A second server with the same tools: its names are prefixed.
		other := &store.MCPServer{Name: "other", Transport: store.TransportStreamableHTTP, URL: up.Endpoint}
		if err := st.CreateMCPServer(ctx, other); err != nil {
			t.Fatal(err)
		}
		tools, err := m.Tools(ctx, other.ID, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		rep, err = mcpimport.Import(ctx, st, other, tools, mcpimport.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(rep.Added, "other_rb_answer") || !slices.Contains(rep.Added, "other_echo") {
			t.Errorf("second server's import: %+v, want prefixed names", rep)
		}
		src, err := st.FindImportSource(ctx, store.SourceMCP, srv.ID)
		if err != nil || src.ImportedCount != 8 || src.FailedCount != 0 {
			t.Errorf("import source = %+v, %v", src, err)
		}
	})
}

func TestLongNamesAreDeterministic(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	ctx := context.Background()
	srv := &store.MCPServer{ID: "s-long", Name: "srv", Transport: store.TransportStdio, Command: store.JSON(`["true"]`)}
	long := strings.Repeat("very.long.tool.name.", 5)
	tools := []*sdk.Tool{{Name: long, InputSchema: map[string]any{"type": "object"}}}
	rep, err := mcpimport.Import(ctx, st, srv, tools, mcpimport.Options{})
	if err != nil || len(rep.Added) != 1 {
		t.Fatalf("Import = %+v, %v", rep, err)
	}
	name := rep.Added[0]
	if len(name) != 64 || !strings.HasPrefix(name, "very_long_tool_name_") {
		t.Errorf("name = %q (%d), want 64 characters", name, len(name))
	}
	st2 := testdb.Open(t, store.DialectSQLite)
	rep2, _ := mcpimport.Import(ctx, st2, srv, tools, mcpimport.Options{})
	if rep2.Added[0] != name {
		t.Errorf("same tool, other catalog: %q, want %q", rep2.Added[0], name)
	}
}

// TestReservedNamesRenamed: a server's tools named like the engine's
// meta-tools are imported under the server's prefix.
func TestReservedNamesRenamed(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	srv := &store.MCPServer{ID: "s-res", Name: "gh", Transport: store.TransportStdio, Command: store.JSON(`["true"]`)}
	tools := []*sdk.Tool{
		{Name: "search_tools", InputSchema: map[string]any{"type": "object"}},
		{Name: "call_tool", InputSchema: map[string]any{"type": "object"}},
	}
	rep, err := mcpimport.Import(context.Background(), st, srv, tools, mcpimport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Added, []string{"gh_call_tool", "gh_search_tools"}) {
		t.Errorf("added %v, want the reserved names prefixed", rep.Added)
	}
}

// Issue 13, point 2: a tool whose inputSchema is over a cost limit fails
// alone, with the limit named; the others import.
func TestImportSchemaCost(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	srv := &store.MCPServer{ID: "s-cost", Name: "srv", Transport: store.TransportStdio, Command: store.JSON(`["true"]`)}
	props := map[string]any{}
	for i := range plugins.DefaultSchemaLimits.Properties + 1 {
		props[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string"}
	}
	tools := []*sdk.Tool{
		{Name: "huge", InputSchema: map[string]any{"type": "object", "properties": props}},
		{Name: "small", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}},
	}
	rep, err := mcpimport.Import(context.Background(), st, srv, tools, mcpimport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Added) != 1 || rep.Added[0] != "small" {
		t.Errorf("added %v, want small", rep.Added)
	}
	if len(rep.Failed) != 1 || rep.Failed[0].Tool != "huge" || !strings.Contains(rep.Failed[0].Error, "limit of 2000 properties") {
		t.Errorf("failed %+v, want huge over the properties limit", rep.Failed)
	}
}

// BenchmarkParameters is the schema conversion of one MCP tool with $defs
// and a recursive type (seed 004 allows 100 ms; the target is under 1 ms).
func BenchmarkParameters(b *testing.B) {
	var in map[string]any
	json.Unmarshal([]byte(`{"type":"object","$defs":{
		"Address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["city"]},
		"Node":{"type":"object","properties":{"label":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}},
		"properties":{"ship_to":{"$ref":"#/$defs/Address"},"bill_to":{"$ref":"#/$defs/Address"},"tree":{"$ref":"#/$defs/Node"}}}`), &in)
	for b.Loop() {
		if _, _, err := mcpimport.Parameters(in, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTitles(t *testing.T) {
	srv := &store.MCPServer{ID: "s1", Name: "s"}
	for _, tc := range []struct {
		tool             sdk.Tool
		title, described string
	}{
		{sdk.Tool{Name: "a", Title: "Given", Description: "Does a."}, "Given", "Does a."},
		{sdk.Tool{Name: "b", Annotations: &sdk.ToolAnnotations{Title: "Annotated"}, Description: "Does b."}, "Annotated", "Does b."},
		{sdk.Tool{Name: "c", Description: "<p>Creates a <b>ticket</b>. Needs a queue.</p>"}, "Creates a ticket", "Creates a ticket. Needs a queue."},
		{sdk.Tool{Name: "list_open_tickets"}, "List open tickets", "list_open_tickets"},
	} {
		tc.tool.InputSchema = map[string]any{"type": "object"}
		p, _, err := mcpimport.Convert(srv, &tc.tool, tc.tool.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.Title != tc.title || p.Description != tc.described {
			t.Errorf("%s: title %q, description %q; want %q, %q", tc.tool.Name, p.Title, p.Description, tc.title, tc.described)
		}
	}
}
