package openapiquery

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/blindexec/blindexec/plugins/openapi"
)

// EnvGitHubSpec names the path of GitHub's REST API description
// (api.github.com.json from the npm package @octokit/openapi), which the
// benchmarks and TestGitHubLatency run on when set.
const EnvGitHubSpec = "BLINDEXEC_GITHUB_SPEC"

// benchDoc returns the bytes of the benchmark document: GitHub's
// description when EnvGitHubSpec is set, else Stripe's from the corpus.
func benchDoc(tb testing.TB) ([]byte, string) {
	tb.Helper()
	if p := os.Getenv(EnvGitHubSpec); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		return b, p
	}
	return readCorpus(tb, "stripe/spec3.2023-09-12.63a67463.yaml.gz"), "stripe"
}

func benchIndex(tb testing.TB) *Index {
	data, name := benchDoc(tb)
	doc, err := openapi.Load(data, name)
	if err != nil {
		tb.Fatal(err)
	}
	return NewIndex(doc)
}

// BenchmarkLoadAndIndex is the index build for a new hash: parse the
// document and index it.
func BenchmarkLoadAndIndex(b *testing.B) {
	data, name := benchDoc(b)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		doc, err := openapi.Load(data, name)
		if err != nil {
			b.Fatal(err)
		}
		NewIndex(doc)
	}
}

// BenchmarkIndex is the indexing alone, on a parsed document.
func BenchmarkIndex(b *testing.B) {
	data, name := benchDoc(b)
	doc, err := openapi.Load(data, name)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		NewIndex(doc)
	}
}

var benchQueries = []string{"", "repository", "list issues", "create pull request review", "customer", "zzz-no-match"}

func BenchmarkSearch(b *testing.B) {
	x := benchIndex(b)
	i := 0
	for b.Loop() {
		if _, err := x.SearchOperations(Query{Text: benchQueries[i%len(benchQueries)], Match: AllFields}, DefaultLimit); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkRequestSchema(b *testing.B) {
	x := benchIndex(b)
	i := 0
	for b.Loop() {
		if _, err := x.RequestSchema(x.ops[i%len(x.ops)].id()); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkResponseSchema(b *testing.B) {
	x := benchIndex(b)
	i := 0
	for b.Loop() {
		if _, err := x.ResponseSchema(x.ops[i%len(x.ops)].id()); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// TestGitHubLatency measures, on GitHub's description, the index build and
// the p99 of search_operations and both schema tools (answer encoded as JSON
// included) over every operation on the warm index (target: under 5 ms). It runs only when EnvGitHubSpec
// is set.
func TestGitHubLatency(t *testing.T) {
	p := os.Getenv(EnvGitHubSpec)
	if p == "" {
		t.Skipf("%s not set", EnvGitHubSpec)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	doc, err := openapi.Load(data, p)
	if err != nil {
		t.Fatal(err)
	}
	parsed := time.Now()
	x := NewIndex(doc)
	t.Logf("GitHub: %d bytes, %d operations; parse %v, index %v, build total %v",
		len(data), len(x.ops), parsed.Sub(start), time.Since(parsed), time.Since(start))

	p99 := func(name string, n int, f func(i int) error) {
		d := make([]time.Duration, n)
		for i := range n {
			s := time.Now()
			if err := f(i); err != nil {
				t.Fatalf("%s %d: %v", name, i, err)
			}
			d[i] = time.Since(s)
		}
		slices.Sort(d)
		q := d[n*99/100]
		t.Logf("%s: n=%d p50 %v p99 %v max %v", name, n, d[n/2], q, d[n-1])
		if q > 5*time.Millisecond {
			t.Errorf("%s: p99 %v, want under 5ms", name, q)
		}
	}
	words := []string{}
	for _, o := range x.ops {
		words = append(words, o.Tags...)
	}
	p99("search_operations", 2000, func(i int) error {
		q := ""
		if i%4 != 0 {
			q = words[i%len(words)] + " " + benchQueries[i%len(benchQueries)]
		}
		return encoded(x.SearchOperations(Query{Text: q, Match: AllFields}, DefaultLimit))
	})
	p99("get_request_schema", len(x.ops), func(i int) error { return encoded(x.RequestSchema(x.ops[i].id())) })
	p99("get_response_schema", len(x.ops), func(i int) error { return encoded(x.ResponseSchema(x.ops[i].id())) })
}

// encoded encodes a tool's answer as the server does, which is part of the
// call's cost.
func encoded[T any](v T, err error) error {
	if err != nil {
		return err
	}
	_, err = json.Marshal(v)
	return err
}
