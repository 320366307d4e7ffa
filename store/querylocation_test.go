package store_test

import (
	"context"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMigrationClearsQueryURLOptions: migration 00034 (leftovers78) clears
// the options of an import source whose SourceURL has a query, where an
// earlier sync stored a credential of it (?access_token=…) whole, shown by
// GET /v1/sources; 00035 (leftovers80) those whose SourceURL may have a
// path parameter (;jsessionid=…); other options stay.
func TestMigrationClearsQueryURLOptions(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		st := testdb.Unmigrated(t, kind)
		if err := st.MigrateUpTo(ctx, 32); err != nil {
			t.Fatal(err)
		}
		for loc, opts := range map[string]string{
			"https://h.example/spec.json?access_token=S3cr3t": `{"Prefix":"","SourceURL":"https://h.example/spec.json?access_token=S3cr3t","conversion_revision":3}`,
			"https://h.example/plain.json":                    `{"Prefix":"p","SourceURL":"https://h.example/plain.json","conversion_revision":3}`,
			"https://h.example/spec.json;jsessionid=S3cr3t":   `{"Prefix":"","SourceURL":"https://h.example/spec.json;jsessionid=S3cr3t","conversion_revision":3}`,
		} {
			if _, err := st.DB().ExecContext(ctx, "INSERT INTO sys_ai_import_source (kind, location, sha256, options) VALUES ('openapi', ?, 'x', ?)", loc, opts); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		for loc, kept := range map[string]bool{"https://h.example/spec.json?access_token=S3cr3t": false, "https://h.example/plain.json": true,
			"https://h.example/spec.json;jsessionid=S3cr3t": false} {
			src, err := st.FindImportSource(ctx, store.SourceOpenAPI, loc)
			if err != nil {
				t.Fatal(err)
			}
			if (src.Options != "") != kept {
				t.Errorf("%s: options %q after the migration, want kept %v", loc, src.Options, kept)
			}
		}
	})
}
