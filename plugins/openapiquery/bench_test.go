package openapiquery

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/plugins/openapi"
)

// EnvGitHubSpec names the path of GitHub's REST API description
// (api.github.com.json from the npm package @octokit/openapi), which the
// benchmarks and the GitHub query tests run on when set.
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

// githubIndex parses and indexes GitHub's description; it skips when
// EnvGitHubSpec is not set.
func githubIndex(tb testing.TB) *Index {
	tb.Helper()
	p := os.Getenv(EnvGitHubSpec)
	if p == "" {
		tb.Skipf("%s not set", EnvGitHubSpec)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	doc, err := openapi.Load(data, p)
	if err != nil {
		tb.Fatal(err)
	}
	return NewIndex(doc)
}

// githubQueries are the query tools' calls over GitHub's description:
// searches mixing its tags with benchQueries, and both schema tools for
// every operation, each answer encoded as the server does.
func githubQueries(x *Index) map[string]func(i int) error {
	words := []string{}
	for _, o := range x.ops {
		words = append(words, o.Tags...)
	}
	return map[string]func(i int) error{
		"search_operations": func(i int) error {
			q := ""
			if i%4 != 0 {
				q = words[i%len(words)] + " " + benchQueries[i%len(benchQueries)]
			}
			return encoded(x.SearchOperations(Query{Text: q, Match: AllFields}, DefaultLimit))
		},
		"get_request_schema":  func(i int) error { return encoded(x.RequestSchema(x.ops[i%len(x.ops)].id())) },
		"get_response_schema": func(i int) error { return encoded(x.ResponseSchema(x.ops[i%len(x.ops)].id())) },
	}
}

// TestGitHubQueries answers every query tool for every operation of
// GitHub's description. How fast is BenchmarkGitHubQueries' to say.
func TestGitHubQueries(t *testing.T) {
	x := githubIndex(t)
	for name, f := range githubQueries(x) {
		for i := range max(len(x.ops), 2000) {
			if err := f(i); err != nil {
				t.Fatalf("%s %d: %v", name, i, err)
			}
		}
	}
}

// BenchmarkGitHubQueries reports, per query tool on GitHub's warm index,
// the p50 and p99 of one call (target: p99 under 5 ms):
//
//	BLINDEXEC_GITHUB_SPEC=… go test -run '^$' -bench GitHubQueries ./plugins/openapiquery
func BenchmarkGitHubQueries(b *testing.B) {
	x := githubIndex(b)
	for name, f := range githubQueries(x) {
		b.Run(name, func(b *testing.B) {
			var d []time.Duration
			i := 0
			for b.Loop() {
				s := time.Now()
				if err := f(i); err != nil {
					b.Fatalf("%s %d: %v", name, i, err)
				}
				d = append(d, time.Since(s))
				i++
			}
			slices.Sort(d)
			b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
		})
	}
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

// BenchmarkRequestSchemaParameters: get_request_schema of an operation
// whose path item and operation declare n parameters each (a hostile
// document's): the merge by name and location is linear in them.
func BenchmarkRequestSchemaParameters(b *testing.B) {
	for _, n := range []int{2_000, 8_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var doc strings.Builder
			list := func(prefix string) {
				for i := range n {
					if i > 0 {
						doc.WriteByte(',')
					}
					fmt.Fprintf(&doc, `{"name":"%s%d","in":"query","schema":{"type":"string"}}`, prefix, i)
				}
			}
			doc.WriteString(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/x":{"parameters":[`)
			list("p")
			doc.WriteString(`],"get":{"operationId":"op","parameters":[`)
			list("q")
			doc.WriteString(`],"responses":{"200":{"description":"ok"}}}}}}`)
			d, err := openapi.Load([]byte(doc.String()), "params")
			if err != nil {
				b.Fatal(err)
			}
			x := NewIndex(d)
			for b.Loop() {
				if r, err := x.RequestSchema("op"); err != nil || len(r.Params.Query.Properties) != 2*n {
					b.Fatalf("%v", err)
				}
			}
		})
	}
}
