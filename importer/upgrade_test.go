package importer_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

// TestSyncAfterUpgrade: a source an earlier engine synced (its options
// fingerprint without the conversion revision, its plugins with HTML and
// without titles) is converted again by the next sync of the same bytes,
// which reports the plugins whose text changed.
func TestSyncAfterUpgrade(t *testing.T) {
	doc := []byte(`{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://api.example.com"}],
	"paths": {
	  "/refunds": {"post": {"operationId": "createRefund", "description": "<p>Create a refund.</p>", "responses": {"200": {"description": "ok"}}}},
	  "/ping": {"get": {"operationId": "ping", "summary": "Ping", "responses": {"200": {"description": "ok"}}}}
	}}`)
	const loc = "https://api.example.com/openapi.json"
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		load := func() *openapi.Document {
			d, err := openapi.Load(doc, loc)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		if _, err := importer.OpenAPI(ctx, st, loc, load(), openapi.Options{}, false); err != nil {
			t.Fatal(err)
		}
		// What the earlier engine left: its fingerprint, its text.
		src, err := st.FindImportSource(ctx, store.SourceOpenAPI, loc)
		if err != nil {
			t.Fatal(err)
		}
		old, _ := json.Marshal(openapi.Options{}) // the fingerprint before the conversion revision
		src.Options = string(old)
		if err := st.UpdateImportSource(ctx, src); err != nil {
			t.Fatal(err)
		}
		row, err := st.GetPlugin(ctx, "createRefund")
		if err != nil {
			t.Fatal(err)
		}
		p, err := catalog.PluginFromRow(row)
		if err != nil {
			t.Fatal(err)
		}
		p.Title, p.Description = "", "<p>Create a refund.</p>"
		oldRow, err := catalog.RowFromPlugin(p)
		if err != nil {
			t.Fatal(err)
		}
		hash, err := openapi.ContentHash(openapi.Operation{Key: *row.SourceKey, Plugin: p})
		if err != nil {
			t.Fatal(err)
		}
		oldRow.ID, oldRow.SourceID, oldRow.SourceKey, oldRow.ContentHash = row.ID, row.SourceID, row.SourceKey, &hash
		if err := st.UpdatePlugin(ctx, oldRow); err != nil {
			t.Fatal(err)
		}

		res, err := importer.OpenAPI(ctx, st, loc, load(), openapi.Options{}, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.UpToDate {
			t.Fatal("the first sync after the upgrade found the source up to date")
		}
		wantList(t, "changed", res.Changed, "createRefund")
		wantList(t, "changed fields", res.ChangedFields["createRefund"], "description", "title")
		row, _ = st.GetPlugin(ctx, "createRefund")
		if p, _ := catalog.PluginFromRow(row); p.Title != "Create a refund" || p.Description != "Create a refund." {
			t.Errorf("after the sync: title %q, description %q", p.Title, p.Description)
		}
		if res, _ := importer.OpenAPI(ctx, st, loc, load(), openapi.Options{}, false); !res.UpToDate {
			t.Errorf("the second sync converted again: %+v", res)
		}
	})
}
