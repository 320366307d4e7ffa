package catalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// oneRow is a Source of one row, at version 1.
type oneRow struct{ row store.Plugin }

func (o *oneRow) ListPlugins(context.Context, store.PluginFilter) ([]store.Plugin, error) {
	return []store.Plugin{o.row}, nil
}

func (o *oneRow) Current() store.Versions { return store.Versions{Plugins: 1} }

// rowColumns are the names a row's refusal may give: its columns, and
// the protocol's fields they hold.
var rowColumns = []string{"parameter_schema", "execution_config", "required_credentials", "consequential", "perms", "name",
	"parameters", "execution", "auth_config", "fixed_params", "tags", "keywords", "description", "title",
	"schema_version", "consequential_hint", "strict", "invisible_removed"}

// FuzzLoadRow writes any JSON into a row's JSON columns, as RuoYi's plain
// SQL may: the catalog never panics, and a row either loads or is left
// out with an error naming a field; a row that loads is one the engine
// would have accepted through the API (plugins.Parse of its document):
// one decision, whichever way a plugin enters.
func FuzzLoadRow(f *testing.F) {
	for _, s := range [][4]string{
		{`{"type":"object","properties":{"id":{"type":"string"}}}`, `{"execution":{"method":"get","base_url":"https://api.example.com/x/{id}"},"auth_config":{"type":"none"}}`, ``, ``},
		{`{"type":"object"}`, `{"execution":{"method":"FETCH","base_url":"https://api.example.com/x"}}`, `[]`, ``},
		{`{"type":"object"}`, `{"execution":{"method":"GET","base_url":"https://api.example.com/x"},"auth_config":{"type":"bearer","token":"tok"}}`, `["tok"]`, `system:user:list`},
		{`{"type":"object"}`, `{"execution":{"type":"mcp","mcp_id":"m","tool_name":"t"},"tags":["a"],"keywords":["b"],"fixed_params":{"x":1}}`, `["k"]`, ``},
		{`{"type":"object","properties":{"q":{"type":"string"}}}`, `{"execution":{"method":"POST","base_url":"https://api.example.com","param_placement":{"default":"body"},"headers":{"X-A":"b"}},"auth_config":{"type":"api_key","mapping":[{"source":"k","target":"X-Key"}]},"strict":true}`, `["k"]`, ``},
		{`{"type":`, `{"execution":`, `[`, `,`},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, params, config, creds, perms string) {
		row := store.Plugin{ID: 1, Name: "fuzz_row", Description: "d", Status: store.StatusEnabled,
			ParameterSchema: store.JSON(params), ExecutionConfig: store.JSON(config), RequiredCredentials: store.JSON(creds)}
		if perms != "" {
			row.Perms = &perms
		}
		var logs bytes.Buffer
		src := &oneRow{row}
		cat := catalog.New(src, src, slog.New(slog.NewTextHandler(&logs, nil)))
		p, err := cat.Plugin(ctx, row.Name)
		if errors.Is(err, store.ErrNotFound) {
			msg := logs.String()
			_, why, _ := strings.Cut(msg, " err=")
			if !strings.Contains(msg, "plugin row left out of the catalog") || !namesAField(why) {
				t.Fatalf("left out without an error naming a field: %s", msg)
			}
			return
		}
		if err != nil {
			t.Fatalf("Plugin: %v", err)
		}
		doc, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("the loaded plugin does not encode: %v", err)
		}
		if _, err := plugins.Parse(doc); err != nil {
			t.Fatalf("loaded from the row, refused through the API: %v\ndocument %s", err, doc)
		}
	})
}

func namesAField(msg string) bool {
	for _, c := range rowColumns {
		if strings.Contains(msg, c) {
			return true
		}
	}
	return false
}

// manyRows is a Source of rows whose version moves on every read of it:
// each call reloads.
type manyRows struct {
	rows    []store.Plugin
	version int64
}

func (m *manyRows) ListPlugins(context.Context, store.PluginFilter) ([]store.Plugin, error) {
	return m.rows, nil
}

func (m *manyRows) Current() store.Versions { m.version++; return store.Versions{Plugins: m.version} }

// BenchmarkLoadRows loads a catalog of 1,000 rows of an import's shape,
// each held to the protocol: the price of a reload. first is a replica's
// first load (every row checked), same a reload with no row changed, one
// a reload after one row changed (an admin's edit).
func BenchmarkLoadRows(b *testing.B) {
	rows := make([]store.Plugin, 1000)
	for i := range rows {
		rows[i] = store.Plugin{ID: int64(i + 1), Name: fmt.Sprintf("op_%d", i), Description: "Lists the items of a project.",
			Status: store.StatusEnabled, RequiredCredentials: store.JSON(`["k"]`),
			ParameterSchema: store.JSON(fmt.Sprintf(`{"type":"object","properties":{"id":{"type":"string","description":"The item %d."},"limit":{"type":"integer","minimum":1}},"required":["id"]}`, i)),
			ExecutionConfig: store.JSON(`{"execution":{"method":"GET","base_url":"https://api.example.com/items/{id}","timeout_ms":5000},"auth_config":{"type":"api_key","mapping":[{"source":"k","target":"X-Key"}]},"tags":["items"]}`)}
	}
	ctx := context.Background()
	load := func(b *testing.B, cat *catalog.Catalog, src *manyRows) {
		if ps, err := cat.EnabledPlugins(ctx); err != nil || len(ps) != len(src.rows) {
			b.Fatalf("%d plugins, %v", len(ps), err)
		}
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			src := &manyRows{rows: rows}
			load(b, catalog.New(src, src, slog.New(slog.DiscardHandler)), src)
		}
	})
	b.Run("same", func(b *testing.B) {
		src := &manyRows{rows: rows}
		cat := catalog.New(src, src, slog.New(slog.DiscardHandler))
		for b.Loop() {
			load(b, cat, src)
		}
	})
	b.Run("one", func(b *testing.B) {
		src := &manyRows{rows: slices.Clone(rows)}
		cat := catalog.New(src, src, slog.New(slog.DiscardHandler))
		n := 0
		for b.Loop() {
			n++
			src.rows[n%len(src.rows)].Description = fmt.Sprintf("Lists the items of a project (edit %d).", n)
			load(b, cat, src)
		}
	})
}
