package toolsearch

import (
	"fmt"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// TestResponseWords: the names of what a tool answers are a weak field
// (issue 49): a request for what it wants back finds the tool that
// answers it; a name most answers share lifts no one; a tool whose own
// text says the word comes before one whose answer does; and an answer's
// word changes no term's idf nor brings a term of its own.
func TestResponseWords(t *testing.T) {
	answering := func(name, title string, words ...string) *plugins.Plugin {
		p := tool(name, title, title+".")
		p.ResponseWords = words
		return p
	}
	catalog := []*plugins.Plugin{
		answering("get_track", "Get a track", "name", "duration_ms", "popularity", "id"),
		answering("get_features", "Get audio features for a track", "danceability", "energy", "tempo", "id"),
		answering("get_artist", "Get an artist", "name", "genres", "followers", "id"),
		tool("rate_dance", "Rate a danceability contest", "Rate a danceability contest."),
		tool("popularity_chart", "Show the popularity chart", "Show the popularity chart."),
		answering("grow_volume", "Resize a volume", "size", "zorbulate"),
	}
	// a name more than max(3, 0.3%) of the tools answer
	for i := range 4 {
		catalog = append(catalog, answering(fmt.Sprintf("filler_%d", i), fmt.Sprintf("Filler %d", i), "popularity"))
	}
	with, err := NewWith(catalog, Parts{Responses: true})
	if err != nil {
		t.Fatal(err)
	}
	without, err := NewWith(catalog, Parts{})
	if err != nil {
		t.Fatal(err)
	}
	score := func(ix *Index, q, name string) float64 {
		for _, r := range ix.Search(q, 20) {
			if r.Name == name {
				return r.Score
			}
		}
		return 0
	}
	for _, tc := range []struct {
		name, q, tool string
		lifted        bool
	}{
		{"what the request wants back", "danceability of a track", "get_features", true},
		{"a name most answers share lifts no one", "track popularity", "get_track", false},
		{"nor does a word only answers say", "zorbulate the volume", "grow_volume", false},
		{"a tool answering nothing asked", "danceability of a track", "get_track", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := score(with, tc.q, tc.tool), score(without, tc.q, tc.tool)
			if lifted := a > b; lifted != tc.lifted || a < b {
				t.Errorf("%q: %s scores %.3f with the field, %.3f without; lifted: want %v", tc.q, tc.tool, a, b, tc.lifted)
			}
		})
	}
	// the field is weak: it never lifts a tool over one whose own text
	// says the word
	if got := names(with.Search("danceability of a track", 3)); len(got) == 0 || got[0] != "rate_dance" {
		t.Errorf("danceability of a track = %v, want rate_dance first", got)
	}
	for _, term := range []string{"danceabl", "track", "popular"} {
		if a, b := with.idf[with.terms[term]], without.idf[without.terms[term]]; a != b {
			t.Errorf("idf of %q %.3f with the field, %.3f without", term, a, b)
		}
	}
	if _, ok := with.terms["zorbul"]; ok {
		t.Error("a word only an answer says is a term of the index")
	}
}
