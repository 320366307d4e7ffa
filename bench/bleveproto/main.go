// Command bleveproto is the prototype behind the choice of tool-search
// index (docs/tool-search.md): the same labelled requests ranked by
// bleve v2.6.3 (BM25, the en and cjk analyzers, per-field boosts) and by
// package toolsearch, with build time and query latency.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
	"github.com/blindexec/blindexec/toolsearch/searcheval"
)

var splitName = regexp.MustCompile(`[_\-]+|([a-z])([A-Z])`)

type doc struct {
	Name, Title, Description, Tags string
}

func index(ps []*plugins.Plugin, analyzer string) (bleve.Index, map[string]*plugins.Plugin, error) {
	im := bleve.NewIndexMapping()
	im.DefaultAnalyzer = analyzer
	dm := bleve.NewDocumentMapping()
	for _, f := range []string{"Name", "Title", "Description", "Tags"} {
		fm := mapping.NewTextFieldMapping()
		fm.Analyzer = analyzer
		dm.AddFieldMappingsAt(f, fm)
	}
	im.DefaultMapping = dm
	im.ScoringModel = "bm25"
	ix, err := bleve.NewMemOnly(im)
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]*plugins.Plugin{}
	b := ix.NewBatch()
	for _, p := range ps {
		if !p.Enabled() {
			continue
		}
		byName[p.Name] = p
		name := splitName.ReplaceAllString(p.Name, "$1 $2")
		b.Index(p.Name, doc{name, p.Title, p.Description, strings.Join(p.Tags, " ")})
	}
	return ix, byName, ix.Batch(b)
}

func searcher(ix bleve.Index, byName map[string]*plugins.Plugin, analyzer string) func(string, int) []toolsearch.Result {
	return func(q string, limit int) []toolsearch.Result {
		var qs []query.Query
		for f, boost := range map[string]float64{"Name": 2, "Title": 3, "Description": 1, "Tags": 1.5} {
			m := bleve.NewMatchQuery(q)
			m.SetField(f)
			m.Analyzer = analyzer
			m.SetBoost(boost)
			qs = append(qs, m)
		}
		req := bleve.NewSearchRequestOptions(bleve.NewDisjunctionQuery(qs...), limit, 0, false)
		res, err := ix.Search(req)
		if err != nil {
			panic(err)
		}
		var out []toolsearch.Result
		for _, h := range res.Hits {
			out = append(out, toolsearch.Result{Name: h.ID, Score: h.Score, Plugin: byName[h.ID]})
		}
		return out
	}
}

func main() {
	spec, td := os.Args[1], os.Args[2]
	for _, set := range []struct{ catalog, analyzer, cases string }{
		{spec, "en", "github-queries.json"},
		{filepath.Join(td, "ruoyi-openapi.json"), "cjk", "ruoyi-queries.json"},
	} {
		cat, err := searcheval.LoadCatalog(set.catalog)
		if err != nil {
			panic(err)
		}
		cases, err := cat.LoadCases(filepath.Join(td, set.cases))
		if err != nil {
			panic(err)
		}
		start := time.Now()
		bx, byName, err := index(cat.Plugins, set.analyzer)
		if err != nil {
			panic(err)
		}
		bBuild := time.Since(start)
		start = time.Now()
		ours, _ := toolsearch.New(cat.Plugins)
		oBuild := time.Since(start)
		b := searcheval.Evaluate(searcher(bx, byName, set.analyzer), cases)
		o := searcheval.Evaluate(ours.Search, cases)
		fmt.Printf("%s (%d tools)\n  bleve      %s  build %v  query p50 %v p99 %v\n  toolsearch %s  build %v  query p50 %v p99 %v\n",
			set.cases, len(byName), b, bBuild.Round(time.Millisecond), b.Percentile(50), b.Percentile(99),
			o, oBuild.Round(time.Millisecond), o.Percentile(50), o.Percentile(99))
	}
}
