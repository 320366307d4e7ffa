package searcheval

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/internal/corpus"
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
	}
	if dir := corpus.Dir(); dir != "" {
		ss = append(ss, source{"stripe", filepath.Join(dir, "stripe/spec3.2022-04-12.e0123a38.json.gz"), nil})
	} else if testingCI() {
		t.Fatal("the shared corpus is missing: Stripe's catalog cannot crowd the others")
	}
	return ss
}

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
		e.together, evalErr = toolsearch.New(e.all.Plugins)
		evalData = e
	})
	if evalErr != nil {
		t.Fatal(evalErr)
	}
	return evalData
}

// TestAloneAndTogether measures each source's requests on its own
// catalog and on every catalog imported together.
func TestAloneAndTogether(t *testing.T) {
	e := loadEvaluation(t)
	t.Logf("together: %d tools", e.together.Len())
	for _, s := range sources(t) {
		alone, err := toolsearch.New(e.catalogs[s.name].Plugins)
		if err != nil {
			t.Fatal(err)
		}
		for _, set := range s.sets {
			a := Evaluate(alone.Search, e.cases[set])
			g := Evaluate(e.together.Search, e.cases[set])
			t.Logf("%-20s alone %s | together %s", set, a, g)
			if strings.Contains(set, "heldout") {
				continue // never tuned on: their misses stay unlisted
			}
			for _, m := range g.Misses {
				t.Logf("   miss %q want %v rank %d got %v", m.Query, m.Want, m.Rank, m.Got)
			}
		}
	}
}

func testingCI() bool { return os.Getenv("CI") != "" }
