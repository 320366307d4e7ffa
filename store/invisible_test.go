package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/invisible"
	"github.com/blindexec/blindexec/internal/invisible/invisibletest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMigrationRemovesInvisible: migration 00013 cleans the plugin rows an
// older engine wrote — texts, parameter texts, a name whose cleaned form
// is free — records what it removed with each row, where the catalog
// reads it, and leaves clean rows, a taken name and what is not text
// alone.
func TestMigrationRemovesInvisible(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		st := testdb.Unmigrated(t, kind)
		if err := st.MigrateUpTo(ctx, 12); err != nil {
			t.Fatal(err)
		}
		smuggled := invisibletest.Tags(invisibletest.Instruction)
		const ins = "INSERT INTO sys_ai_plugin (name, title, description, parameter_schema, execution_config, status) VALUES (?, ?, ?, ?, ?, '0')"
		cfg := `{"execution": {"method": "GET", "base_url": "https://x.example/\u200b"}, "tags": ["t"]}`
		for _, row := range [][]any{
			{"tagged", "Tagged" + smuggled, "Reads.\u202e", `{"type": "object", "properties": {"q": {"type": "string", "description": "Words\u200b", "enum": ["a\u200bb"]}}}`, cfg},
			{"renamed\u2060", "Renamed", "Persian می\u200cخواهم stays.", `{"type": "object"}`, cfg},
			{"taken\u200b", "Taken", "d", `{"type": "object"}`, cfg},
			{"taken", "Taken", "d", `{"type": "object"}`, cfg},
			{"clean", "Clean 👨\u200d👩\u200d👧", "Clean.", `{"type":"object"}`, cfg},
		} {
			if _, err := st.DB().ExecContext(ctx, ins, row...); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.DB().ExecContext(ctx, "INSERT INTO sys_ai_plugin (name) VALUES ('bare\u200b')"); err != nil {
			t.Fatal(err)
		}
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if err := st.CheckMigrated(ctx); err != nil {
			t.Fatalf("after Migrate: %v", err)
		}

		removals := func(r *store.Plugin) []invisible.Removal {
			t.Helper()
			var cfg struct {
				InvisibleRemoved []invisible.Removal `json:"invisible_removed"`
				Tags             []string            `json:"tags"`
			}
			if len(r.ExecutionConfig) > 0 {
				if err := json.Unmarshal(r.ExecutionConfig, &cfg); err != nil {
					t.Fatal(err)
				}
			}
			if r.Name != "bare" && (len(cfg.Tags) != 1 || !strings.Contains(string(r.ExecutionConfig), `https://x.example/\u200b`)) {
				t.Errorf("%s: execution_config lost what is not text: %s", r.Name, r.ExecutionConfig)
			}
			return cfg.InvisibleRemoved
		}
		get := func(name string) *store.Plugin {
			t.Helper()
			r, err := st.GetPlugin(ctx, name)
			if err != nil {
				t.Fatalf("%q: %v", name, err)
			}
			return r
		}

		r := get("tagged")
		if r.Title != "Tagged" || r.Description != "Reads." || string(r.ParameterSchema) != `{"type": "object", "properties": {"q": {"type": "string", "description": "Words", "enum": ["a\u200bb"]}}}` {
			t.Errorf("tagged: %q %q %s", r.Title, r.Description, r.ParameterSchema)
		}
		var got []string
		for _, rm := range removals(r) {
			got = append(got, rm.String())
		}
		if want := "title: 28 invisible characters removed (tag); description: 1 invisible character removed (bidi); parameters.properties.q.description: 1 invisible character removed (zero_width)"; strings.Join(got, "; ") != want {
			t.Errorf("tagged's removals: %q\nwant %q", strings.Join(got, "; "), want)
		}
		// The catalog reads what the migration recorded.
		p, err := catalog.PluginFromRow(r)
		if err != nil || len(p.InvisibleRemoved) != 3 {
			t.Errorf("catalog reads %v, %v: want the 3 removals", p.InvisibleRemoved, err)
		}

		r = get("renamed")
		if r.Description != "Persian می\u200cخواهم stays." || len(removals(r)) != 1 || removals(r)[0].Field != "name" {
			t.Errorf("renamed: %q, %v", r.Description, removals(r))
		}
		if r := get("taken\u200b"); len(removals(r)) != 0 {
			t.Errorf("a row whose cleaned name is taken keeps its name, and nothing is recorded as removed from it: %v", removals(r))
		}
		if r := get("clean"); r.UpdateBy == "migration 00013" || len(removals(r)) != 0 {
			t.Errorf("a clean row was written: %+v", r)
		}
		if r := get("bare"); string(r.ParameterSchema) != "" || len(removals(r)) != 1 {
			t.Errorf("bare: %s %s", r.ParameterSchema, r.ExecutionConfig)
		}
	})
}
