package searcheval

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/internal/corpus"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
)

// source is an API of the evaluation: its catalog and labelled sets.
type source struct {
	name, catalog string
	sets          []string
}

// sources are every catalog the evaluation has, with their requests:
// GitHub's (when present), Stripe's (from the shared corpus, when present;
// no requests, it only crowds the others) and those of testdata.
func sources(t *testing.T) []source {
	ss := []source{
		{"github", githubSpec(t), []string{"github-queries.json", "github-heldout.json"}},
		{"slack", "../testdata/slack-openapi.json", []string{"slack-queries.json", "slack-heldout.json"}},
		{"spotify", "../testdata/spotify-openapi.json", []string{"spotify-queries.json", "spotify-heldout.json"}},
		{"ruoyi", "../testdata/ruoyi-openapi.json", []string{"ruoyi-queries.json", "ruoyi-heldout.json"}},
		{"crm", "../testdata/yudao-crm-openapi.json", []string{"crm-queries.json", "crm-heldout.json"}},
		// issue 49's sets, and three APIs with no requests that bring the
		// catalog past 4,000 tools
		{"zoom", "../testdata/zoom-openapi.json.gz", []string{"zoom-queries.json", "zoom-heldout.json"}},
		{"hetzner", "../testdata/hetzner-openapi.json.gz", []string{"hetzner-queries.json", "hetzner-heldout.json"}},
		{"xero", "../testdata/xero-openapi.json.gz", []string{"xero-queries.json", "xero-heldout.json"}},
		{"mall", "../testdata/mall-openapi.json", []string{"mall-queries.json", "mall-heldout.json"}},
		{"docusign", "../testdata/crowd-docusign.net.json.gz", nil},
		{"digitalocean", "../testdata/crowd-digitalocean.com.json.gz", nil},
		{"trello", "../testdata/crowd-trello.com.json.gz", nil},
	}
	if dir := corpus.Dir(); dir != "" {
		ss = append(ss, source{"stripe", filepath.Join(dir, "stripe/spec3.2022-04-12.e0123a38.json.gz"), nil})
	} else if testingCI() {
		t.Fatal("the shared corpus is missing: Stripe's catalog cannot crowd the others")
	}
	return ss
}

// crossSets are requests in one language for tools described in the
// other (issue 49), labelled "source:KEY": measured on every catalog
// together only.
var crossSets = []string{"cross-queries.json", "cross-heldout.json"}

// evaluation is every source's catalog and cases, loaded once.
type evaluation struct {
	catalogs map[string]*Catalog
	cases    map[string][]Case // by set file
	all      *Catalog
	together *toolsearch.Index
}

var (
	evalOnce sync.Once
	evalData *evaluation
	evalErr  error
)

func loadEvaluation(t *testing.T) *evaluation {
	t.Helper()
	ss := sources(t)
	evalOnce.Do(func() {
		e := &evaluation{catalogs: map[string]*Catalog{}, cases: map[string][]Case{}}
		var cs []*Catalog
		for _, s := range ss {
			c, err := LoadPrefixed(s.catalog, s.name)
			if err != nil {
				evalErr = err
				return
			}
			e.catalogs[s.name] = c
			cs = append(cs, c)
			for _, set := range s.sets {
				if e.cases[set], err = c.LoadCases(filepath.Join("../testdata", set)); err != nil {
					evalErr = err
					return
				}
			}
		}
		if e.all, evalErr = Combine(cs...); evalErr != nil {
			return
		}
		for _, set := range crossSets {
			if e.cases[set], evalErr = e.all.LoadCases(filepath.Join("../testdata", set)); evalErr != nil {
				return
			}
		}
		e.together, evalErr = toolsearch.New(e.all.Plugins)
		evalData = e
	})
	if evalErr != nil {
		t.Fatal(evalErr)
	}
	return evalData
}

// Goals of issue 35, recall@5 on its held-out sets with every catalog
// imported together, and the figures of the sets that existed before it,
// each alone, which must not fall (docs/tool-search.md).
const (
	englishHeldOutGoal = 0.75
	chineseHeldOutGoal = 0.90
)

var before = map[string]float64{
	"github-queries.json": 105.0 / 119, "github-heldout.json": 32.0 / 40,
	"ruoyi-queries.json": 1, "ruoyi-heldout.json": 1,
}

// together49 is each set's recall@5, in requests, with every catalog
// imported together (4,070 tools) on the commit issue 49's sets were
// added, before any change of that issue: no earlier set may lose more
// than maxLoss of it (issue 49 point 5).
var together49 = map[string]int{
	"github-queries.json": 100, "github-heldout.json": 32,
	"slack-queries.json": 18, "slack-heldout.json": 17,
	"spotify-queries.json": 12, "spotify-heldout.json": 14,
	"ruoyi-queries.json": 39, "ruoyi-heldout.json": 13,
	"crm-queries.json": 18, "crm-heldout.json": 19,
	"zoom-queries.json": 16, "zoom-heldout.json": 15,
	"hetzner-queries.json": 12, "hetzner-heldout.json": 13,
	"xero-queries.json": 10, "xero-heldout.json": 9,
	"mall-queries.json": 17, "mall-heldout.json": 15,
	"cross-queries.json": 4, "cross-heldout.json": 2,
}

const maxLoss = 0.03

// after49 is the recall@5, in requests, of issue 49's own sets with its
// changes (docs/tool-search.md): they may not fall below it. mall's
// tuned-on set is one request under its figure before (the dictionary's
// translations lift English tools over two of its paraphrases).
// Diversifying the first five (toolsearch's diversify) found one more of
// Hetzner's tuned-on requests and of Xero's held-out ones; WordNet's
// phrasal verbs one more of Zoom's tuned-on and held-out ones; a short
// Chinese word taking its long form's English (重启: reboot) one more of
// the tuned-on requests across languages; ECDICT's commonest Chinese word
// of an English word (ad: 广告) one more of the held-out ones; the words of
// WordNet's definition of a word no tool has (banner: advertising) one
// more of the tuned-on ones.
var after49 = map[string]int{
	"zoom-queries.json": 17, "zoom-heldout.json": 16,
	"hetzner-queries.json": 15, "hetzner-heldout.json": 13,
	"xero-queries.json": 10, "xero-heldout.json": 11,
	"mall-queries.json": 16, "mall-heldout.json": 15,
	"cross-queries.json": 12, "cross-heldout.json": 8,
}

// TestAloneAndTogether measures each source's requests on its own
// catalog and on every catalog imported together, and the requests
// across languages together: no set may fall more than maxLoss below
// its figure before issue 49, and issue 35's held-out sets meet their
// goals together.
func TestAloneAndTogether(t *testing.T) {
	e := loadEvaluation(t)
	t.Logf("together: %d tools", e.together.Len())
	var english, englishN float64
	check := func(set string, g Figures) {
		if n, ok := after49[set]; ok {
			if floor := float64(n) / float64(g.N); g.Recall5 < floor-1e-9 {
				t.Errorf("%s together: recall@5 %.3f, %.3f with issue 49's changes", set, g.Recall5, floor)
			}
		} else if floor := float64(together49[set]) / float64(g.N); g.Recall5 < floor-maxLoss-1e-9 {
			t.Errorf("%s together: recall@5 %.3f, %.3f before issue 49: more than %.2f lost", set, g.Recall5, floor, maxLoss)
		}
		if strings.Contains(set, "heldout") {
			return // never tuned on: their misses stay unlisted
		}
		for _, m := range g.Misses {
			t.Logf("   miss %q want %v rank %d got %v", m.Query, m.Want, m.Rank, m.Got)
		}
	}
	for _, s := range sources(t) {
		alone, err := toolsearch.New(e.catalogs[s.name].Plugins)
		if err != nil {
			t.Fatal(err)
		}
		for _, set := range s.sets {
			a := Evaluate(alone.Search, e.cases[set])
			g := Evaluate(e.together.Search, e.cases[set])
			t.Logf("%-20s alone %s | together %s", set, a, g)
			if floor, ok := before[set]; ok && a.Recall5 < floor-1e-9 {
				t.Errorf("%s: recall@5 %.3f alone, %.3f before issue 35", set, a.Recall5, floor)
			}
			switch set {
			case "slack-heldout.json", "spotify-heldout.json":
				english += g.Recall5 * float64(g.N)
				englishN += float64(g.N)
			case "crm-heldout.json":
				if g.Recall5 < chineseHeldOutGoal {
					t.Errorf("%s together: recall@5 %.3f, goal %.2f", set, g.Recall5, chineseHeldOutGoal)
				}
			}
			check(set, g)
		}
	}
	for _, set := range crossSets {
		g := Evaluate(e.together.Search, e.cases[set])
		t.Logf("%-20s together %s", set, g)
		check(set, g)
	}
	if r := english / englishN; r < englishHeldOutGoal {
		t.Errorf("issue 35's English held-out requests together: recall@5 %.3f, goal %.2f", r, englishHeldOutGoal)
	} else {
		t.Logf("issue 35's English held-out requests together: recall@5 %.3f (n=%.0f)", r, englishN)
	}
}

// TestTitlesDoNotMatter: a source whose tools come without titles ranks
// as if it had them, made from their descriptions (Slack's operations
// have no summary): the same results for every request.
func TestTitlesDoNotMatter(t *testing.T) {
	c, err := LoadCatalog("../testdata/slack-openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var bare []*plugins.Plugin
	for _, p := range c.Plugins {
		if p.Title == "" {
			t.Fatalf("%s: imported without a title", p.Name)
		}
		q := *p
		q.Title = ""
		bare = append(bare, &q)
	}
	titled, err := toolsearch.New(c.Plugins)
	if err != nil {
		t.Fatal(err)
	}
	untitled, err := toolsearch.New(bare)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{"slack-queries.json", "slack-heldout.json"} {
		cases, err := c.LoadCases(filepath.Join("../testdata", set))
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range cases {
			a, b := names(titled.Search(cs.Query, 5)), names(untitled.Search(cs.Query, 5))
			if !slices.Equal(a, b) {
				t.Errorf("%q: %v with titles, %v without", cs.Query, a, b)
			}
		}
	}
}

func names(rs []toolsearch.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

func testingCI() bool { return os.Getenv("CI") != "" }

// TestPagesOfOneRanking: with every catalog together, a search's first
// n results are the first n of a deeper search, for each tuned-on
// request: diversifying the first five (over a deeper window, with
// their own floor for the tools passed over) keeps every page a slice
// of one ranking.
func TestPagesOfOneRanking(t *testing.T) {
	e := loadEvaluation(t)
	for set, cases := range e.cases {
		if strings.Contains(set, "heldout") {
			continue
		}
		for _, cs := range cases {
			all := names(e.together.Search(cs.Query, toolsearch.MaxLimit))
			for _, n := range []int{1, 3, 5, 8} {
				if got := names(e.together.Search(cs.Query, n)); !slices.Equal(got, all[:min(n, len(all))]) {
					t.Errorf("%q: Search(%d) = %v, the first of %v", cs.Query, n, got, all[:min(n, len(all))])
				}
			}
		}
	}
}
