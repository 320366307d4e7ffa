package openapi

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func TestSync(t *testing.T) {
	v1, err := os.ReadFile("testdata/seed002.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// v2: /initialize removed, /tools/call changed, /ping added.
	v2 := strings.Replace(string(v1), "  /initialize:\n    post:\n",
		"  /ping:\n    get:\n      responses: {'200': {description: ok}}\n  /initialize:\n    x-removed:\n", 1)
	v2 = strings.Replace(v2, "summary: 調用工具", "summary: 調用工具 (v2)", 1)
	const loc = "https://runbook.example.com/openapi.yaml"
	opts := Options{BaseURL: "https://runbook.example.com/mcp", Prefix: "rb"}
	load := func(t *testing.T, data []byte) *Document {
		doc, err := Load(data, loc)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}

	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		// A dry run of a new source writes nothing.
		res, err := Sync(ctx, st, loc, load(t, v1), opts, true)
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

		res, err = Sync(ctx, st, loc, load(t, v1), opts, false)
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
		res, err = Sync(ctx, st, loc, load(t, v1), opts, false)
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
		res, err = Sync(ctx, st, loc, load(t, []byte(v2)), opts, true)
		if err != nil {
			t.Fatal(err)
		}
		beforeV2 := listAll(t, st)
		wantList(t, "dry run v2 added", res.Added, "rb_get_ping")
		wantList(t, "dry run v2 changed", res.Changed, "rb_post_tools_call")
		wantList(t, "dry run v2 removed", res.Removed, "rb_post_initialize")
		wantList(t, "dry run v2 unchanged", res.Unchanged, "rb_post_tools_list")
		if !sameRows(beforeV2, listAll(t, st)) {
			t.Error("dry run v2 wrote rows")
		}

		res, err = Sync(ctx, st, loc, load(t, []byte(v2)), opts, false)
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
		res, err = Sync(ctx, st, loc, load(t, v1), opts, false)
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
