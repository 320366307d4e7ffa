package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

func TestJSONDepth(t *testing.T) {
	for doc, want := range map[string]int{
		``:                          0,
		`1`:                         0,
		`{}`:                        1,
		`[[],{"a":[1]}]`:            3,
		`{"a":"[[[{"}`:              1,
		`{"a":"\"[[","b":{}}`:       2,
		`{"a\\":["\\\\"],"b":"\\"}`: 2,
	} {
		if got := jsonDepth([]byte(doc)); got != want {
			t.Errorf("jsonDepth(%s) = %d, want %d", doc, got, want)
		}
	}
}

// TestImportDeepSchemas: MariaDB refuses JSON nested 32 levels or more, so
// an import into it fails each operation whose parameter schema is that
// deep with a reason naming the limit, a dry run too, and imports the
// rest; SQLite imports them all. Operations from 20 to 40 levels deep,
// the limit among them.
func TestImportDeepSchemas(t *testing.T) {
	paths := map[string]any{}
	for n := 20; n <= 40; n++ {
		s := map[string]any{"type": "string"}
		for range n {
			s = map[string]any{"type": "array", "items": s}
		}
		paths[fmt.Sprintf("/deep%d", n)] = map[string]any{"post": map[string]any{
			"operationId": fmt.Sprintf("deep%d", n),
			"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": s}}},
			"responses":   map[string]any{"200": map[string]any{"description": "ok"}},
		}}
	}
	data, err := json.Marshal(map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "deep", "version": "1"}, "paths": paths})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		for _, dry := range []bool{true, false} {
			doc, err := openapi.Load(data, "deep.json")
			if err != nil {
				t.Fatal(err)
			}
			res, err := OpenAPI(context.Background(), st, "deep.json", doc, openapi.Options{BaseURL: "https://api.example.com"}, dry)
			if err != nil {
				t.Fatal(err)
			}
			failed := map[string]string{}
			for _, f := range res.Failed {
				failed[f.Key] = f.Reason
			}
			depths := map[int]bool{}
			for _, op := range res.Operations {
				d := jsonDepth(op.Plugin.Parameters)
				depths[d] = true
				reason, refused := failed[op.Key]
				switch {
				case st.Dialect() == store.DialectMySQL && d > maxStoredDepth:
					if want := fmt.Sprintf("its parameter schema nests %d levels deep, and MariaDB's JSON columns hold at most 31", d); !strings.Contains(reason, want) {
						t.Errorf("dry %v, %s (%d deep): reason %q, want %q", dry, op.Key, d, reason, want)
					}
				case refused:
					t.Errorf("dry %v, %s (%d deep) failed: %s", dry, op.Key, d, reason)
				}
			}
			if !depths[maxStoredDepth] || !depths[maxStoredDepth+1] {
				t.Fatalf("depths %v: the limit not among them", depths)
			}
			if !dry {
				rows, err := st.ListPlugins(context.Background(), store.PluginFilter{})
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) != len(res.Operations)-len(res.Failed) || len(rows) != len(res.Added) {
					t.Errorf("%d plugins stored, %d added, of %d operations, %d failed", len(rows), len(res.Added), len(res.Operations), len(res.Failed))
				}
			}
		}
	})
}

// TestImportDeepMCPTool: the same for an MCP server's tool, the rest of
// its tools imported.
func TestImportDeepMCPTool(t *testing.T) {
	deep := map[string]any{"type": "string"}
	for range 40 {
		deep = map[string]any{"type": "array", "items": deep}
	}
	tools := []*sdk.Tool{
		{Name: "deep", Description: "deep", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"a": deep}}},
		{Name: "shallow", Description: "shallow", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}},
	}
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		srv := &store.MCPServer{Name: "deep", Transport: store.TransportStreamableHTTP, URL: "http://127.0.0.1:1/mcp", AuthConfig: store.JSON(`{"type":"none"}`)}
		if err := st.CreateMCPServer(ctx, srv); err != nil {
			t.Fatal(err)
		}
		rep, err := MCPTools(ctx, st, srv, tools, MCPOptions{By: "admin"})
		if err != nil {
			t.Fatal(err)
		}
		if st.Dialect() != store.DialectMySQL {
			if len(rep.Added) != 2 || len(rep.Failed) != 0 {
				t.Errorf("report %+v, want both added", rep)
			}
			return
		}
		if len(rep.Added) != 1 || rep.Added[0] != "deep_shallow" && rep.Added[0] != "shallow" || len(rep.Failed) != 1 || rep.Failed[0].Tool != "deep" ||
			!strings.Contains(rep.Failed[0].Error, "levels deep, and MariaDB's JSON columns hold at most 31") {
			t.Errorf("report %+v, want shallow added and deep failed by the limit", rep)
		}
	})
}
