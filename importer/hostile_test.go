package importer_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/hostiledoc"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

// TestHostileImportBounded imports the attacker review's document
// (hostiledoc.SharedBody: 2,000 operations of one body of 3,000
// long-named properties took 33 s) and its variants just within a
// plugin's limits (long names, and short: hostiledoc.ShortFields), dry
// and for real. The first imports every operation with its body as one
// free-form argument (each over an inline plugin's 2,000 properties even
// with its fields free-form): 2,000 small plugins; the others are
// refused whole over the import's limit and write nothing, not even
// their source. Its work is held to allocations and bytes allocated,
// counted from the decoded document on.
func TestHostileImportBounded(t *testing.T) {
	for _, tc := range []struct {
		name          string
		doc           func(ops, props int) []byte
		ops, props    int
		refused       bool
		maxAllocs     uint64 // of the import, after Load
		maxAllocBytes uint64
	}{
		// 33 s and 2,000 plugins of 3,000 properties before; 45,000
		// allocations and 5 MB when each operation failed; now that each
		// imports as a plugin of one free-form argument, 140,000 and
		// 16 MB dry, 343,000 and 35 MB writing the 2,000 plugins
		{"2,000 operations of one body of 3,000 properties", hostiledoc.SharedBody, 2000, 3000, false, 400_000, 48 << 20},
		// each plugin within its limits: the import's limit stops it,
		// after converting (not encoding) 64 MiB of plugins: 40,000
		// allocations and 407 MB (4.7 million and 1.5 GB before names
		// and placements were written once per name and without
		// encoding/json); 31,000 and 258 MB since each argument counts
		// at least what it holds (long names are cut)
		{"2,000 operations of one body of 1,999 properties", hostiledoc.SharedBody, 2000, plugins.DefaultSchemaLimits.Properties - 1, true, 45_000, 320 << 20},
		// the same of short names (f0000): 27 bytes a field counted, some
		// 300 held (each argument's placement and root entry), so 1,284
		// operations and 1.3 GB before each argument counted at least
		// those; now 247, 27,000 allocations and 257 MB
		{"2,000 operations of one body of 1,999 short properties", hostiledoc.ShortFields, 2000, plugins.DefaultSchemaLimits.Properties - 1, true, 40_000, 320 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.doc(tc.ops, tc.props)
			for _, dry := range []bool{true, false} {
				st := testdb.Open(t, "sqlite")
				doc, err := openapi.Load(data, "hostile.json")
				if err != nil {
					t.Fatal(err)
				}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				res, err := importer.OpenAPI(context.Background(), st, "hostile.json", doc, openapi.Options{}, dry)
				runtime.ReadMemStats(&after)
				allocs, bytes := after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc
				t.Logf("%d kB of document, dry %v: %d allocations, %d MB allocated", len(data)>>10, dry, allocs, bytes>>20)
				maxAllocs, maxBytes := tc.maxAllocs, tc.maxAllocBytes
				if raceEnabled {
					// 174,000 allocations and 55 MB for the first under the
					// race detector: four times the bounds still catch what
					// they were set for (84 million and 21 GB before).
					maxAllocs, maxBytes = 4*maxAllocs, 4*maxBytes
				}
				if allocs > maxAllocs || bytes > maxBytes {
					t.Errorf("%d allocations and %d MB, over the bounds of %d and %d MB", allocs, bytes>>20, maxAllocs, maxBytes>>20)
				}
				var tl *openapi.TooLargeError
				if tc.refused {
					if !errors.As(err, &tl) || res != nil {
						t.Fatalf("not refused: %v", err)
					}
					if _, err := st.FindImportSource(context.Background(), store.SourceOpenAPI, "hostile.json"); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("a refused import wrote its source: %v", err)
					}
				} else {
					if err != nil {
						t.Fatal(err)
					}
					if len(res.Failed) != 0 || len(res.Added) != tc.ops {
						t.Fatalf("%d failed, %d added", len(res.Failed), len(res.Added))
					}
					want := ": request body of 3000 fields made one free-form object argument (the schema has more than the limit of 2000 properties: an inline plugin's limit)"
					if w := res.Warnings(); len(w) != tc.ops || !strings.HasSuffix(w[0], want) {
						t.Errorf("%d warnings, the first %q", len(w), w)
					}
				}
				written := 0
				if !tc.refused && !dry {
					written = tc.ops
				}
				rows, err := st.ListPlugins(context.Background(), store.PluginFilter{})
				if err != nil || len(rows) != written {
					t.Errorf("%d plugins written (%v), want %d", len(rows), err, written)
				}
			}
		})
	}
}
