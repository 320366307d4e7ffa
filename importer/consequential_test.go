package importer_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

const consequentialDoc = `openapi: 3.0.3
info: {title: Shop, version: "1"}
paths:
  /items:
    get:
      operationId: listItems
      responses: {'200': {description: ok}}
    post:
      operationId: addItem
      summary: Add an item
      x-openai-isConsequential: false
      responses: {'200': {description: ok}}
  /items/{id}:
    delete:
      operationId: deleteItem
      summary: Delete an item
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {'204': {description: gone}}
`

// TestSyncKeepsConsequential: an import reads x-openai-isConsequential as
// a suggestion and lists each plugin's classification; an administrator's
// choice survives a sync that changes the plugins (and their suggestion),
// and so do the perms an administrator set (issue 46).
func TestSyncKeepsConsequential(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		opts := openapi.Options{BaseURL: "https://shop.example.com", Force: true}
		sync := func(doc string) *importer.SyncResult {
			t.Helper()
			d, err := openapi.Load([]byte(doc), "https://shop.example.com/openapi.yaml")
			if err != nil {
				t.Fatal(err)
			}
			res, err := importer.OpenAPI(ctx, st, "https://shop.example.com/openapi.yaml", d, opts, false)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		res := sync(consequentialDoc)
		want := map[string]bool{"listItems": false, "addItem": false, "deleteItem": true}
		if !maps.Equal(res.Consequential, want) {
			t.Fatalf("first import classification %v, want %v", res.Consequential, want)
		}
		yes, no := "1", "0"
		if _, err := st.SetPluginsConsequential(ctx, []string{"deleteItem"}, &no, "admin"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetPluginsConsequential(ctx, []string{"addItem"}, &yes, "admin"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetPluginsPerms(ctx, []string{"deleteItem"}, plugins.JoinPerms([]string{"shop:item:remove"}), "admin"); err != nil {
			t.Fatal(err)
		}
		// The document changes both operations, and now suggests addItem
		// is consequential: the administrator's choice stands anyway.
		doc := strings.Replace(consequentialDoc, "Delete an item", "Delete an item for good", 1)
		doc = strings.Replace(doc, "x-openai-isConsequential: false", "x-openai-isConsequential: true", 1)
		res = sync(doc)
		if len(res.Changed) != 2 {
			t.Fatalf("changed %v, want addItem and deleteItem", res.Changed)
		}
		want = map[string]bool{"listItems": false, "addItem": true, "deleteItem": false}
		if !maps.Equal(res.Consequential, want) {
			t.Errorf("after the sync: classification %v, want %v", res.Consequential, want)
		}
		for name, col := range map[string]string{"addItem": "1", "deleteItem": "0"} {
			row, err := st.GetPlugin(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if row.Consequential == nil || *row.Consequential != col {
				t.Errorf("%s: consequential column %v after the sync, want %q", name, row.Consequential, col)
			}
		}
		if p := plugin(t, st, "deleteItem"); !slices.Equal(p.Perms, []string{"shop:item:remove"}) {
			t.Errorf("deleteItem's perms after the sync: %v", p.Perms)
		}
	})
}

// TestMCPImportKeepsConsequential: an upstream's annotations are hints
// (issue 48 point 2). An untrusted server's readOnlyHint does not lower
// its tool's class — it could mark its own delete tool read-only — while a
// trusted server's does; a tool without annotations, or marked
// destructive, is consequential either way (MCP's defaults). An
// administrator's choice wins over both and survives a re-import of a
// changed tool.
func TestMCPImportKeepsConsequential(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		for _, trusted := range []bool{false, true} {
			ctx := context.Background()
			name := map[bool]string{false: "shop", true: "vetted"}[trusted]
			srv := &store.MCPServer{Name: name, Transport: store.TransportStreamableHTTP, URL: "https://" + name + ".example/mcp", Trusted: trusted}
			if err := st.CreateMCPServer(ctx, srv); err != nil {
				t.Fatal(err)
			}
			schema := map[string]any{"type": "object"}
			destructive := true
			tools := func(desc string) []*sdk.Tool {
				return []*sdk.Tool{
					{Name: name + "_look", Description: desc, InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
					{Name: name + "_refund", Description: desc, InputSchema: schema},
					{Name: name + "_wipe", Description: desc, InputSchema: schema, Annotations: &sdk.ToolAnnotations{DestructiveHint: &destructive}},
				}
			}
			rep, err := importer.MCPTools(ctx, st, srv, tools("v1"), importer.MCPOptions{By: "admin"})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]bool{name + "_look": !trusted, name + "_refund": true, name + "_wipe": true}; !maps.Equal(rep.Consequential, want) {
				t.Fatalf("trusted=%v: classification %v, want %v", trusted, rep.Consequential, want)
			}
			yes, no := "1", "0"
			if _, err := st.SetPluginsConsequential(ctx, []string{name + "_refund"}, &no, "admin"); err != nil {
				t.Fatal(err)
			}
			if _, err := st.SetPluginsConsequential(ctx, []string{name + "_look"}, &yes, "admin"); err != nil {
				t.Fatal(err)
			}
			if _, err := st.SetPluginsPerms(ctx, []string{name + "_refund"}, plugins.JoinPerms([]string{"shop:order:refund", "shop:order:edit"}), "admin"); err != nil {
				t.Fatal(err)
			}
			rep, err = importer.MCPTools(ctx, st, srv, tools("v2"), importer.MCPOptions{By: "admin"})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]bool{name + "_look": true, name + "_refund": false, name + "_wipe": true}; len(rep.Updated) != 3 || !maps.Equal(rep.Consequential, want) {
				t.Errorf("trusted=%v: re-import: updated %v, classification %v; want all updated, %v", trusted, rep.Updated, rep.Consequential, want)
			}
			p := plugin(t, st, name+"_refund")
			if p.IsConsequential() || !slices.Equal(p.Perms, []string{"shop:order:refund", "shop:order:edit"}) {
				t.Errorf("refund after re-import: consequential %v, perms %v", p.IsConsequential(), p.Perms)
			}
		}
	})
}

// plugin reads the catalog's plugin called name.
func plugin(t *testing.T, st *store.Store, name string) *plugins.Plugin {
	t.Helper()
	row, err := st.GetPlugin(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := catalog.PluginFromRow(row)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
