package importer_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

func TestSync(t *testing.T) {
	v1, err := os.ReadFile("../plugins/openapi/testdata/seed002.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// v2: /initialize removed, /tools/call changed, /ping added.
	v2 := strings.Replace(string(v1), "  /initialize:\n    post:\n",
		"  /ping:\n    get:\n      responses: {'200': {description: ok}}\n  /initialize:\n    x-removed:\n", 1)
	v2 = strings.Replace(v2, "summary: 調用工具", "summary: 調用工具 (v2)", 1)
	const loc = "https://runbook.example.com/openapi.yaml"
	opts := openapi.Options{BaseURL: "https://runbook.example.com/mcp", Prefix: "rb"}
	load := func(t *testing.T, data []byte) *openapi.Document {
		doc, err := openapi.Load(data, loc)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}

	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		// A dry run of a new source writes nothing.
		res, err := importer.OpenAPI(ctx, st, loc, load(t, v1), opts, true)
		if err != nil {
			t.Fatal(err)
		}
		wantList(t, "dry run added", res.Added, "rb_post_initialize", "rb_post_tools_call", "rb_post_tools_list")
		if rows := listAll(t, st); len(rows) != 0 {
			t.Fatalf("dry run wrote %d plugins", len(rows))
		}
		if _, err := st.FindImportSource(ctx, store.SourceOpenAPI, loc); err == nil {
			t.Fatal("dry run wrote the source")
		}

		res, err = importer.OpenAPI(ctx, st, loc, load(t, v1), opts, false)
		if err != nil {
			t.Fatal(err)
		}
		wantList(t, "added", res.Added, "rb_post_initialize", "rb_post_tools_call", "rb_post_tools_list")
		src, err := st.FindImportSource(ctx, store.SourceOpenAPI, loc)
		if err != nil {
			t.Fatal(err)
		}
		if src.ID != res.SourceID || src.SHA256 != load(t, v1).SHA256 || src.ImportedCount != 3 || src.FailedCount != 0 || src.ImportedTime == nil {
			t.Errorf("source = %+v", src)
		}
		before := listAll(t, st)
		for _, r := range before {
			if r.SourceID == nil || *r.SourceID != src.ID || r.SourceKey == nil || r.ContentHash == nil || r.Status != store.StatusEnabled {
				t.Errorf("row %s: source %v key %v hash %v status %s", r.Name, r.SourceID, r.SourceKey, r.ContentHash, r.Status)
			}
		}

		// The same bytes: nothing converted, nothing written.
		res, err = importer.OpenAPI(ctx, st, loc, load(t, v1), opts, false)
		if err != nil || !res.UpToDate || len(res.Added)+len(res.Changed)+len(res.Removed) > 0 {
			t.Fatalf("same bytes: %+v, %v", res, err)
		}
		if after := listAll(t, st); !sameRows(before, after) {
			t.Errorf("same bytes rewrote rows")
		}

		// An administrator's choice survives a changed document.
		if err := st.SetPluginStatus(ctx, "rb_post_tools_list", store.StatusDisabled, "admin"); err != nil {
			t.Fatal(err)
		}
		// The modified document, first as a dry run.
		res, err = importer.OpenAPI(ctx, st, loc, load(t, []byte(v2)), opts, true)
		if err != nil {
			t.Fatal(err)
		}
		beforeV2 := listAll(t, st)
		wantList(t, "dry run v2 added", res.Added, "rb_get_ping")
		wantList(t, "dry run v2 changed", res.Changed, "rb_post_tools_call")
		if f := res.ChangedFields["rb_post_tools_call"]; len(f) == 0 || len(res.ChangedFields) != 1 {
			t.Errorf("dry run v2: what changed: %v", res.ChangedFields)
		}
		wantList(t, "dry run v2 removed", res.Removed, "rb_post_initialize")
		wantList(t, "dry run v2 unchanged", res.Unchanged, "rb_post_tools_list")
		if !sameRows(beforeV2, listAll(t, st)) {
			t.Error("dry run v2 wrote rows")
		}

		res, err = importer.OpenAPI(ctx, st, loc, load(t, []byte(v2)), opts, false)
		if err != nil {
			t.Fatal(err)
		}
		wantList(t, "v2 added", res.Added, "rb_get_ping")
		wantList(t, "v2 changed", res.Changed, "rb_post_tools_call")
		wantList(t, "v2 removed", res.Removed, "rb_post_initialize")
		rows := map[string]store.Plugin{}
		for _, r := range listAll(t, st) {
			rows[r.Name] = r
		}
		if len(rows) != 4 {
			t.Fatalf("%d rows after v2, want 4 (removed ones are kept)", len(rows))
		}
		if r := rows["rb_post_initialize"]; r.Status != store.StatusDisabled {
			t.Errorf("removed plugin status %q, want disabled", r.Status)
		}
		if r := rows["rb_post_tools_list"]; r.Status != store.StatusDisabled {
			t.Errorf("the administrator's disable was undone")
		}
		if r := rows["rb_post_tools_call"]; r.Title != "調用工具 (v2)" || r.Status != store.StatusEnabled {
			t.Errorf("changed plugin: title %q status %q", r.Title, r.Status)
		}

		// Back to v1: the removed operation returns, enabled.
		res, err = importer.OpenAPI(ctx, st, loc, load(t, v1), opts, false)
		if err != nil {
			t.Fatal(err)
		}
		wantList(t, "v1 again added", res.Added, "rb_post_initialize")
		wantList(t, "v1 again removed", res.Removed, "rb_get_ping")
		if r, _ := st.GetPlugin(ctx, "rb_post_initialize"); r == nil || r.Status != store.StatusEnabled {
			t.Errorf("returned plugin: %+v", r)
		}
	})
}

func listAll(t *testing.T, st *store.Store) []store.Plugin {
	t.Helper()
	rows, err := st.ListPlugins(context.Background(), store.PluginFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func sameRows(a, b []store.Plugin) bool {
	return slices.EqualFunc(a, b, func(x, y store.Plugin) bool {
		return x.Name == y.Name && x.Status == y.Status && x.UpdateTime.Equal(y.UpdateTime) &&
			*x.ContentHash == *y.ContentHash && string(x.ExecutionConfig) == string(y.ExecutionConfig)
	})
}

func wantList(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// TestSyncSourceIdentity (issue 17, point 8): a source is its location or
// an explicit name, inline documents are told apart by their titles, and
// the same bytes with other options, or --force, are re-imported.
func TestSyncSourceIdentity(t *testing.T) {
	doc := func(t *testing.T, title, opID string) *openapi.Document {
		d, err := openapi.Load([]byte(`{"openapi":"3.0.3","info":{"title":"`+title+`","version":"1"},"servers":[{"url":"https://x.example"}],
			"paths":{"/run":{"post":{"operationId":"`+opID+`","responses":{"200":{"description":"ok"}}}},
			"/items":{"get":{"operationId":"list_5","responses":{"200":{"description":"ok"}}}}}}`), "")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		sync := func(t *testing.T, location string, d *openapi.Document, opts openapi.Options) *importer.SyncResult {
			t.Helper()
			res, err := importer.OpenAPI(ctx, st, location, d, opts, false)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		// Two inline documents are two sources: the second disables
		// nothing of the first, and a name both want is told apart.
		a := sync(t, "", doc(t, "Alpha", "run"), openapi.Options{})
		wantList(t, "alpha added", a.Added, "get_items", "run")
		b := sync(t, "", doc(t, "Beta API", "run"), openapi.Options{})
		wantList(t, "beta added", b.Added, "beta_api_get_items", "beta_api_run")
		if a.SourceID == b.SourceID || len(b.Removed) != 0 {
			t.Fatalf("the second inline document took the first's source: %+v", b)
		}
		for _, r := range listAll(t, st) {
			if r.Status != store.StatusEnabled {
				t.Errorf("%s disabled", r.Name)
			}
		}

		// The same bytes: a no-op; with other options, or forced, not.
		if res := sync(t, "", doc(t, "Alpha", "run"), openapi.Options{}); !res.UpToDate {
			t.Errorf("same bytes, same options: %+v", res)
		}
		res := sync(t, "", doc(t, "Alpha", "run"), openapi.Options{BaseURL: "https://other.example"})
		wantList(t, "new base URL changed", res.Changed, "get_items", "run")
		for _, name := range []string{"get_items", "run"} {
			wantList(t, "new base URL: what changed in "+name, res.ChangedFields[name], "execution")
		}
		if r, _ := st.GetPlugin(ctx, "run"); r == nil || !strings.Contains(string(r.ExecutionConfig), "other.example") {
			t.Errorf("the new base URL was not applied: %+v", r)
		}
		for _, opts := range []openapi.Options{{BaseURL: "https://other.example", Strict: true}, {BaseURL: "https://other.example", Tags: []string{"x"}}} {
			if res := sync(t, "", doc(t, "Alpha", "run"), opts); res.UpToDate {
				t.Errorf("options %+v: a no-op", opts)
			}
		}
		if res := sync(t, "", doc(t, "Alpha", "run"), openapi.Options{BaseURL: "https://other.example", Tags: []string{"x"}, Force: true}); res.UpToDate {
			t.Error("--force: a no-op")
		}

		// An explicit name is the identity, wherever the bytes come from.
		s1 := sync(t, "https://a.example/openapi.json", doc(t, "Gamma", "go"), openapi.Options{Source: "gamma", Prefix: "g"})
		s2 := sync(t, "/tmp/gamma.json", doc(t, "Gamma", "go"), openapi.Options{Source: "gamma", Prefix: "g"})
		if s1.SourceID != s2.SourceID || !s2.UpToDate {
			t.Errorf("--source gamma from two places: %+v then %+v", s1, s2)
		}

		// Point 7: a plugin imported under an older name keeps it unless
		// the administrator opts in; the diff shows the rename.
		old, err := st.GetPlugin(ctx, "g_get_items")
		if err != nil {
			t.Fatal(err)
		}
		old.Name = "g_list_5"
		if err := st.UpdatePlugin(ctx, old); err != nil {
			t.Fatal(err)
		}
		res = sync(t, "x", doc(t, "Gamma", "go"), openapi.Options{Source: "gamma", Prefix: "g", Force: true})
		wantList(t, "kept names", append(res.Changed, res.Unchanged...), "g_go", "g_list_5")
		if len(res.Renamed) != 0 {
			t.Errorf("renamed without opting in: %+v", res.Renamed)
		}
		res = sync(t, "x", doc(t, "Gamma", "go"), openapi.Options{Source: "gamma", Prefix: "g", Force: true, Rename: true})
		if len(res.Renamed) != 1 || res.Renamed[0] != (importer.Rename{From: "g_list_5", To: "g_get_items"}) {
			t.Errorf("renamed = %+v", res.Renamed)
		}
		if _, err := st.GetPlugin(ctx, "g_get_items"); err != nil {
			t.Errorf("the rename was not written: %v", err)
		}
	})
}
