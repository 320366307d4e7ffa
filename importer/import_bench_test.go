package importer_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/corpus"
	"github.com/blindexec/blindexec/internal/githubcatalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
)

// stripeSpec is Stripe's description in the shared corpus.
const stripeSpec = "stripe/spec3.2022-04-12.e0123a38.json.gz"

func readStripe(tb testing.TB) []byte { return corpus.Read(tb, stripeSpec) }

func readGitHub(tb testing.TB) []byte {
	tb.Helper()
	data, err := os.ReadFile(githubcatalog.Path(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// benchImport imports data as `blindexec import openapi --dry-run
// --base-url ...` does (Load, then Sync against a migrated SQLite store),
// and reports allocations per operation imported. Each iteration compiles
// the schemas anew, as a new process would.
func benchImport(data []byte) func(b *testing.B) {
	return func(b *testing.B) {
		st := testdb.Open(b, "sqlite")
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		ops := 0
		for b.Loop() {
			plugins.DropCompiled()
			doc, err := openapi.Load(data, "bench")
			if err != nil {
				b.Fatal(err)
			}
			opts := openapi.Options{}
			if doc.Raw["servers"] == nil {
				opts.BaseURL = "https://api.example.com"
			}
			res, err := importer.OpenAPI(context.Background(), st, "bench", doc, opts, true)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Failed) > 0 {
				b.Fatalf("%d operations failed, the first: %v", len(res.Failed), res.Failed[0])
			}
			ops = len(res.Operations)
		}
		b.ReportMetric(float64(ops), "operations")
	}
}

func BenchmarkImportStripe(b *testing.B) { benchImport(readStripe(b))(b) }

// BenchmarkImportGitHubSync is GitHub's description through the whole
// import (plugins/openapi's BenchmarkImportGitHub converts it), Validate
// included.
func BenchmarkImportGitHubSync(b *testing.B) { benchImport(readGitHub(b))(b) }

// importBudgets are the allocations per operation each document's import
// may make: about 1.1× what it made when set.
// At commit 8da4abf, before the import validated its plugins, 870 and
// 780; compiling every plugin's schema for Validate, 2,880 and 1,690
// (issue 32); proving them instead, 1,045 and 870, and encoding the
// schemas without reflection, 800 and 767 (issue 50); 822 and 785 on
// main before the hostile-import work, which made them 762 and 747
// (components expanded once, placements written without a map), held to
// 840 and 820.
var importBudgets = []struct {
	name   string
	read   func(testing.TB) []byte
	budget float64
}{
	{"Stripe", readStripe, 840},
	{"GitHub", readGitHub, 820},
}

// TestImportAllocBudget holds BenchmarkImportStripe and
// BenchmarkImportGitHubSync to their budgets of allocations per operation:
// a deterministic count, where time depends on the machine (a race build
// counts about 3% more).
func TestImportAllocBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("imports Stripe and GitHub whole")
	}
	for _, d := range importBudgets {
		t.Run(d.name, func(t *testing.T) {
			data := d.read(t)
			var failed string
			r := testing.Benchmark(func(b *testing.B) {
				benchImport(data)(b)
				if b.Failed() {
					failed = "the benchmark failed"
				}
			})
			if failed != "" || r.N == 0 {
				t.Fatalf("%s (%d runs)", failed, r.N)
			}
			ops := r.Extra["operations"]
			per := float64(r.AllocsPerOp()) / ops
			t.Logf("%s: %.0f operations, %d allocations per import, %.0f per operation (budget %.0f), %v per import",
				d.name, ops, r.AllocsPerOp(), per, d.budget, r.T/time.Duration(r.N))
			if per > d.budget {
				t.Errorf("%.0f allocations per operation, over the budget of %.0f", per, d.budget)
			}
		})
	}
}
