package searcheval

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/blindexec/blindexec/toolsearch"
)

// githubSpec is GitHub's REST description from @octokit/openapi@23.0.2:
// $BLINDEXEC_GITHUB_SPEC, else where the bench runner (and .ci/run) put
// it. Missing, the test fails under CI and is skipped elsewhere.
func githubSpec(t *testing.T) string {
	p := os.Getenv("BLINDEXEC_GITHUB_SPEC")
	if p == "" {
		p = "../../bench/.cache/octokit-openapi-23.0.2/api.github.com.json"
	}
	if _, err := os.Stat(p); err != nil {
		msg := "GitHub's REST description is missing (" + p + "): run `go run ./bench -only toolsearch` once, or set BLINDEXEC_GITHUB_SPEC"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

type figures struct{ engine, plain Figures }

func measure(t *testing.T, catalog, cases string) figures {
	t.Helper()
	c, err := LoadCatalog(catalog)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.LoadCases(filepath.Join("../testdata", cases))
	if err != nil {
		t.Fatal(err)
	}
	engine, err := toolsearch.New(c.Plugins)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := toolsearch.NewBaseline(c.Plugins)
	if err != nil {
		t.Fatal(err)
	}
	f := figures{Evaluate(engine.Search, cs), Evaluate(plain.Search, cs)}
	t.Logf("%s: engine %s; plain BM25 %s", cases, f.engine, f.plain)
	return f
}

// TestChineseQuality holds the engine to the goal in Chinese, on the
// requests it was tuned on and on the held-out ones.
func TestChineseQuality(t *testing.T) {
	for _, cases := range []string{"ruoyi-queries.json", "ruoyi-heldout.json"} {
		f := measure(t, "../testdata/ruoyi-openapi.json", cases)
		if f.engine.Recall5 < 0.95 {
			t.Errorf("%s: recall@5 %.3f, goal 0.95", cases, f.engine.Recall5)
		}
	}
}

// TestEnglishQuality: on GitHub's catalog the engine meets the 0.85 goal
// on the requests it was tuned on, not on the held-out ones (docs/tool-search.md); it
// must keep beating plain BM25, and the figures must not fall more than a
// request or two below those recorded in docs/tool-search.md (0.882 and 0.800).
func TestEnglishQuality(t *testing.T) {
	spec := githubSpec(t)
	for cases, floor := range map[string]float64{"github-queries.json": 0.86, "github-heldout.json": 0.77} {
		f := measure(t, spec, cases)
		if f.engine.Recall5 <= f.plain.Recall5 || f.engine.MRR <= f.plain.MRR {
			t.Errorf("%s: the engine (%s) does not beat plain BM25 (%s)", cases, f.engine, f.plain)
		}
		if f.engine.Recall5 < floor {
			t.Errorf("%s: recall@5 %.3f fell below %.2f", cases, f.engine.Recall5, floor)
		}
	}
}

func TestLoadCasesRefusesUnknownLabels(t *testing.T) {
	c, err := LoadCatalog("../testdata/ruoyi-openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`[{"q": "x", "want": ["GET /nowhere"]}]`), 0o644)
	if _, err := c.LoadCases(bad); err == nil {
		t.Fatal("a label naming no operation was accepted")
	}
}

// BenchmarkBuildGitHub builds the index of GitHub's catalog (the bench
// runner reports the figures per 1,000 tools).
func BenchmarkBuildGitHub(b *testing.B) {
	p := os.Getenv("BLINDEXEC_GITHUB_SPEC")
	if p == "" {
		p = "../../bench/.cache/octokit-openapi-23.0.2/api.github.com.json"
	}
	c, err := LoadCatalog(p)
	if err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := toolsearch.New(c.Plugins); err != nil {
			b.Fatal(err)
		}
	}
}
