package toolsearch

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// TestDiversify: the first page of a request that names no source holds
// the best tool of each source scoring diversityRatio of the first
// result or more, in place of the last of the page's tools whose source
// another shares; the first two results keep their places.
func TestDiversify(t *testing.T) {
	// hits are written "source score", best first; the sources are
	// letters, "-" a tool of no source
	type tc struct {
		name  string
		hits  string
		named bool // the request names a source
		want  string
	}
	cases := []tc{
		{"a look-alike within the ratio joins the page",
			"a 10, a 9.9, a 9.8, a 9.7, a 9.6, b 9", false, "a 10, a 9.9, a 9.8, a 9.7, b 9, a 9.6"},
		{"one under the ratio does not",
			"a 10, a 9.9, a 9.8, a 9.7, a 9.6, b 8", false, "a 10, a 9.9, a 9.8, a 9.7, a 9.6, b 8"},
		{"a request naming a source is left as it is",
			"a 10, a 9.9, a 9.8, a 9.7, a 9.6, b 9", true, "a 10, a 9.9, a 9.8, a 9.7, a 9.6, b 9"},
		{"a tool of no source is not pulled in",
			"a 10, a 9.9, a 9.8, a 9.7, a 9.6, - 9", false, "a 10, a 9.9, a 9.8, a 9.7, a 9.6, - 9"},
		{"each source once, best first, the displaced next in their order",
			"a 10, a 9.9, a 9.8, a 9.7, a 9.6, b 9.5, b 9.4, c 9.3, d 9.2, e 9.1", false,
			"a 10, a 9.9, b 9.5, c 9.3, d 9.2, a 9.8, a 9.7, a 9.6, b 9.4, e 9.1"},
		{"the first two keep their places",
			"a 10, a 9.9, b 9.8, c 9.7, d 9.6, e 9.5", false, "a 10, a 9.9, b 9.8, c 9.7, d 9.6, e 9.5"},
		{"a source already on the page brings nothing more",
			"a 10, b 9.9, a 9.8, a 9.7, a 9.6, b 9.5", false, "a 10, b 9.9, a 9.8, a 9.7, a 9.6, b 9.5"},
		{"five results are left as they are",
			"a 10, a 9.9, a 9.8, a 9.7, b 9.6", false, "a 10, a 9.9, a 9.8, a 9.7, b 9.6"},
	}
	// past the window: the 21st result is not a candidate
	deep := strings.Repeat("a 10, ", diversityWindow) + "b 10"
	cases = append(cases, tc{"past the window", deep, false, deep})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ix := &Index{w: DefaultWeights()}
			var hits []hit
			for i, f := range strings.Split(c.hits, ", ") {
				var src string
				var score float64
				if _, err := fmt.Sscan(f, &src, &score); err != nil {
					t.Fatal(err)
				}
				s := int32(-1)
				if src != "-" {
					s = int32(src[0] - 'a')
				}
				ix.docs = append(ix.docs, &plugins.Plugin{Name: fmt.Sprintf("%s%d", src, i)})
				ix.docSource = append(ix.docSource, s)
				hits = append(hits, hit{int32(i), score})
			}
			var rq request
			if c.named {
				rq.sources = []int32{0}
			}
			ix.diversify(hits, &rq)
			got := make([]string, len(hits))
			for i, h := range hits {
				got[i] = fmt.Sprintf("%s %g", ix.docs[h.doc].Name[:1], h.score)
			}
			if g := strings.Join(got, ", "); g != c.want {
				t.Errorf("%s\n got %s\nwant %s", c.hits, g, c.want)
			}
		})
	}
}

// TestDiversifySearch: six tools of one API that say "upload a public SSH
// key" a little better than another API's one would fill the first five;
// the other's joins them, every page a slice of one ranking. Without
// sources (the index does not know which API a tool is of) it does not.
func TestDiversifySearch(t *testing.T) {
	alpha := &plugins.Source{Name: "alpha", Title: "Alpha API"}
	beta := &plugins.Source{Name: "beta", Title: "Beta API"}
	from := func(s *plugins.Source, name, title, desc string) *plugins.Plugin {
		p := tool(name, title, desc)
		p.Source = s
		return p
	}
	ps := []*plugins.Plugin{
		from(beta, "beta_upload_key", "Upload an SSH key for a server", "Uploads a public SSH key."),
		from(beta, "beta_list_servers", "List servers", "Lists all servers."),
		from(&plugins.Source{Name: "gamma"}, "gamma_upload_file", "Upload a file", "Uploads a file for a server."),
	}
	for _, who := range []string{"user", "team", "organization", "project", "repository", "application"} {
		ps = append(ps, from(alpha, "alpha_upload_key_"+who, "Upload a public SSH key for a "+who, "Uploads a public SSH key for the "+who+"."))
	}
	const q = "upload my ssh public key"
	ix, err := New(ps)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := ix.Rank(q, 0)
	page := names(ix.Search(q, 5))
	if !slices.Contains(page, "beta_upload_key") || !strings.HasPrefix(page[0], "alpha_") {
		t.Errorf("%q: %v, want an alpha tool first and beta_upload_key in the first five", q, page)
	}
	if slices.Contains(page, "gamma_upload_file") {
		t.Errorf("%q: %v: gamma's tool scores under the ratio", q, page)
	}
	for _, n := range []int{1, 3, 5, 7} {
		if rs, _ := ix.Rank(q, n); !slices.Equal(names(rs), names(all[:n])) {
			t.Errorf("Rank(%q, %d) = %v, the first %d of %v", q, n, names(rs), n, names(all))
		}
	}
	if named := names(ix.Search(q+" on alpha", 5)); slices.Contains(named, "beta_upload_key") {
		t.Errorf("%q on alpha: %v: a named source's tools first, no other pulled in", q, named)
	}
	unsourced, err := NewWith(ps, Parts{Lexicon: true, Bilingual: true})
	if err != nil {
		t.Fatal(err)
	}
	if page := names(unsourced.Search(q, 5)); slices.Contains(page, "beta_upload_key") {
		t.Errorf("without sources: %v holds beta_upload_key: the test proves nothing", page)
	}
}
