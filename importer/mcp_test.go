package importer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/mcpimport"
	"github.com/blindexec/blindexec/store"
)

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
		hand, _ := catalog.RowFromPlugin(&plugins.Plugin{Name: "echo", Description: "mine", Parameters: json.RawMessage(`{"type":"object"}`),
			Execution: plugins.Execution{Method: "GET", BaseURL: "https://example.com"}})
		if err := st.CreatePlugin(ctx, hand); err != nil {
			t.Fatal(err)
		}
		m := mcp.NewManager(st, egresstest.Client(t))
		defer m.Close()
		creds := map[string]string{"rb_key": "k-0123456789"}
		sync := func() *importer.MCPReport {
			t.Helper()
			tools, err := m.Tools(ctx, srv.ID, creds, true)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := importer.MCPTools(ctx, st, srv, tools, importer.MCPOptions{By: "admin"})
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
		p, _ := catalog.PluginFromRow(row)
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
		rep, err = importer.MCPTools(ctx, st, other, tools, importer.MCPOptions{})
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
	rep, err := importer.MCPTools(ctx, st, srv, tools, importer.MCPOptions{})
	if err != nil || len(rep.Added) != 1 {
		t.Fatalf("Import = %+v, %v", rep, err)
	}
	name := rep.Added[0]
	if len(name) != 64 || !strings.HasPrefix(name, "very_long_tool_name_") {
		t.Errorf("name = %q (%d), want 64 characters", name, len(name))
	}
	st2 := testdb.Open(t, store.DialectSQLite)
	rep2, _ := importer.MCPTools(ctx, st2, srv, tools, importer.MCPOptions{})
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
	rep, err := importer.MCPTools(context.Background(), st, srv, tools, importer.MCPOptions{})
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
	rep, err := importer.MCPTools(context.Background(), st, srv, tools, importer.MCPOptions{})
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

// TestImportTotalBounded: a server's tools each within a plugin's limits
// but, together, over the import's (MCPOptions.MaxBytes,
// BLINDEXEC_IMPORT_MAX_MB) refuse the import whole, naming the limit and
// the tool at which it passed: nothing is written, not even the import
// source; under the limit they import. A tool's outputSchema is held to a
// plugin's limits as its inputSchema is.
func TestImportTotalBounded(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	ctx := context.Background()
	srv := &store.MCPServer{ID: "s-total", Name: "srv", Transport: store.TransportStdio, Command: store.JSON(`["true"]`)}
	props := map[string]any{}
	for i := range 1000 {
		props[fmt.Sprintf("property_%04d", i)] = map[string]any{"type": "string", "description": strings.Repeat("d", 40)}
	}
	tools := make([]*sdk.Tool, 40) // some 75 kB each: 3 MB in all
	for i := range tools {
		tools[i] = &sdk.Tool{Name: fmt.Sprintf("tool_%02d", i), InputSchema: map[string]any{"type": "object", "properties": props}}
	}
	_, err := importer.MCPTools(ctx, st, srv, tools, importer.MCPOptions{MaxBytes: 1 << 20})
	var tl *mcpimport.TooLargeError
	if !errors.As(err, &tl) || tl.Listed || tl.Max != 1<<20 || tl.Tools < 2 || tl.Tools >= len(tools) ||
		!strings.Contains(err.Error(), "1 MiB (BLINDEXEC_IMPORT_MAX_MB)") || !strings.Contains(err.Error(), tl.Tool) {
		t.Fatalf("MCPTools = %v; want a TooLargeError of the plugins naming 1 MiB, its setting and the tool", err)
	}
	if _, err := st.FindImportSource(ctx, store.SourceMCP, srv.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("import source after the refusal: %v, want none", err)
	}
	if rows, err := st.ListPlugins(ctx, store.PluginFilter{}); err != nil || len(rows) != 0 {
		t.Errorf("plugins after the refusal: %d, %v; want none", len(rows), err)
	}

	big := map[string]any{}
	for i := range plugins.DefaultSchemaLimits.Properties + 1 {
		big[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string"}
	}
	few := append(tools[:3:3], &sdk.Tool{Name: "huge_output", InputSchema: map[string]any{"type": "object"},
		OutputSchema: map[string]any{"type": "object", "properties": big}})
	rep, err := importer.MCPTools(ctx, st, srv, few, importer.MCPOptions{MaxBytes: 1 << 20})
	if err != nil || len(rep.Added) != 3 {
		t.Fatalf("three tools under the limit: %+v, %v; want them added", rep, err)
	}
	if len(rep.Failed) != 1 || rep.Failed[0].Tool != "huge_output" || !strings.Contains(rep.Failed[0].Error, "outputSchema") ||
		!strings.Contains(rep.Failed[0].Error, "limit of 2000 properties") {
		t.Errorf("failed %+v, want huge_output's outputSchema over the properties limit", rep.Failed)
	}
}
