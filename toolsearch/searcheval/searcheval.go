// Package searcheval measures tool search on labelled requests: recall@1,
// recall@5 and mean reciprocal rank, for any catalog an OpenAPI document
// describes. The bench runner prints its figures; tests hold the engine to
// them.
package searcheval

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/toolsearch"
)

// Case is a labelled request: what a person would ask, and the operations
// that would serve it, by plugin name or by OpenAPI key ("GET /path").
type Case struct {
	Query string   `json:"q"`
	Want  []string `json:"want"`
	// Paraphrase marks a request written without the operation's own
	// words (issue 49 sets: a quarter of each).
	Paraphrase bool `json:"paraphrase,omitempty"`
}

// Catalog is an OpenAPI document converted to plugins, with the names of
// its operations by key.
type Catalog struct {
	Plugins []*plugins.Plugin
	prefix  string
	byKey   map[string]string
	names   map[string]bool
}

// LoadCatalog converts the OpenAPI document at path (JSON or YAML,
// gzip-compressed if its name ends in .gz) as an import would, with
// default options, every tool enabled.
func LoadCatalog(path string) (*Catalog, error) { return LoadPrefixed(path, "") }

// LoadPrefixed is LoadCatalog with the tools' names prefixed (the import's
// --prefix), as when sources sharing names are imported side by side;
// labels of cases may still name the tools without it.
func LoadPrefixed(path, prefix string) (*Catalog, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := openapi.Load(data, strings.TrimSuffix(filepath.Base(path), ".gz"))
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	ops, _, err := openapi.Convert(doc, openapi.Options{Prefix: prefix, PluginLimits: crowdLimits, MaxBytes: 1 << 30})
	if err != nil {
		return nil, fmt.Errorf("convert %s: %w", path, err)
	}
	c := &Catalog{prefix: prefix, byKey: map[string]string{}, names: map[string]bool{}}
	// what an import records of its source (issue 49 point 1)
	src := &plugins.Source{Name: prefix, Title: doc.Title, TagDescriptions: doc.TagDescriptions()}
	for _, op := range ops {
		op.Plugin.Source = src
		// An operation whose security scheme the engine cannot apply
		// (Slack's and Spotify's OAuth2 authorization code) is imported
		// disabled until the operator configures a credential; it is
		// searched once they have.
		op.Plugin.Status = plugins.StatusEnabled
		c.Plugins = append(c.Plugins, op.Plugin)
		c.byKey[op.Key] = op.Plugin.Name
		c.names[op.Plugin.Name] = true
	}
	return c, nil
}

// crowdLimits lift an import's bounds of what a plugin may hold, so that
// the catalog stays the one every figure of issues 35 and 49 was taken
// on (4,070 tools): DocuSign's 37 operations whose schemas are over an
// inline plugin's limits, which an import now reduces, remain in the
// crowd whole, so that a ranking change is never confused with a change
// of the crowd (alone, dropping them moved a held-out request of
// Hetzner's).
var crowdLimits = plugins.SchemaLimits{Bytes: 1 << 30, Depth: 1 << 10, Properties: 1 << 30, RefExpansions: 1 << 30, Nodes: 1 << 30}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	return io.ReadAll(r)
}

// Combine is one catalog of the tools of cs, as if their sources were
// imported side by side; a name two of them share is an error. Its cases
// name an operation of a prefixed catalog as "prefix:KEY"
// ("hetzner:GET /servers"), as a request across sources must.
func Combine(cs ...*Catalog) (*Catalog, error) {
	all := &Catalog{byKey: map[string]string{}, names: map[string]bool{}}
	for _, c := range cs {
		for k, name := range c.byKey {
			if c.prefix != "" {
				all.byKey[c.prefix+":"+k] = name
			}
		}
		for _, p := range c.Plugins {
			if all.names[p.Name] {
				return nil, fmt.Errorf("two catalogs have a tool %q", p.Name)
			}
			all.names[p.Name] = true
			all.Plugins = append(all.Plugins, p)
		}
	}
	return all, nil
}

// LoadCases reads labelled requests (a JSON array of Case) and resolves
// their labels to plugin names of c; a label naming nothing in c is an
// error, so a changed catalog cannot silently lower the bar.
func (c *Catalog) LoadCases(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []Case
	if err := json.Unmarshal(data, &cases); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, cs := range cases {
		for j, w := range cs.Want {
			switch {
			case c.names[w]:
			case c.prefix != "" && c.names[c.prefix+"_"+w]:
				cases[i].Want[j] = c.prefix + "_" + w
			case c.byKey[w] != "":
				cases[i].Want[j] = c.byKey[w]
			default:
				return nil, fmt.Errorf("%s: %q: no operation %q in the catalog", path, cs.Query, w)
			}
		}
	}
	return cases, nil
}

// Figures are the quality of a ranking over a set of cases.
type Figures struct {
	N       int
	Recall1 float64 // share of cases with a wanted tool first
	Recall5 float64 // share with a wanted tool in the first five
	MRR     float64 // mean of 1/rank of the first wanted tool (0 past MaxLimit)
	MRR10   float64 // the same, 0 past rank 10
	// Latency of the searches, sorted.
	Latencies []time.Duration
	// Misses are the cases without a wanted tool in the first five, with
	// what came first instead.
	Misses []Miss
}

// Miss is a case recall@5 missed.
type Miss struct {
	Case
	Rank int // of the first wanted tool; 0: not within MaxLimit
	Got  []string
}

// Evaluate runs every case against search.
func Evaluate(search func(q string, limit int) []toolsearch.Result, cases []Case) Figures {
	f := Figures{N: len(cases)}
	for _, cs := range cases {
		start := time.Now()
		rs := search(cs.Query, toolsearch.MaxLimit)
		f.Latencies = append(f.Latencies, time.Since(start))
		rank := 0
		for i, r := range rs {
			if slices.Contains(cs.Want, r.Name) {
				rank = i + 1
				break
			}
		}
		if rank == 1 {
			f.Recall1++
		}
		if rank >= 1 && rank <= 5 {
			f.Recall5++
		} else {
			var got []string
			for _, r := range rs[:min(3, len(rs))] {
				got = append(got, r.Name)
			}
			f.Misses = append(f.Misses, Miss{cs, rank, got})
		}
		if rank > 0 {
			f.MRR += 1 / float64(rank)
		}
		if rank > 0 && rank <= 10 {
			f.MRR10 += 1 / float64(rank)
		}
	}
	if f.N > 0 {
		f.Recall1 /= float64(f.N)
		f.Recall5 /= float64(f.N)
		f.MRR /= float64(f.N)
		f.MRR10 /= float64(f.N)
	}
	sort.Slice(f.Latencies, func(i, j int) bool { return f.Latencies[i] < f.Latencies[j] })
	return f
}

// Percentile of the latencies (p in 0..100).
func (f Figures) Percentile(p float64) time.Duration {
	if len(f.Latencies) == 0 {
		return 0
	}
	i := int(float64(len(f.Latencies)-1) * p / 100)
	return f.Latencies[i]
}

func (f Figures) String() string {
	return fmt.Sprintf("recall@1 %.3f  recall@5 %.3f  MRR %.3f  (n=%d)", f.Recall1, f.Recall5, f.MRR, f.N)
}
