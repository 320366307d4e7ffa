package searcheval

import (
	"fmt"
	"testing"

	"github.com/blindexec/blindexec/toolsearch"
)

// TestFoldWeights checks whether a change of the weights generalizes
// within the tuned-on halves: each tuned-on set is cut in two folds
// (its requests at even and at odd positions), and each setting's mean
// MRR@10 (every set once) and recall@5 (requests) are printed per fold,
// against the defaults'. A step that the coordinate ascent
// (TestTuneWeights) would take on the whole and that raises one fold
// only fits requests, not the catalog. The settings are the ninth
// session's (docs/tool-search.md): the step it kept, reversed, and the
// steps it refused that raised the mean most. It fails when the step the
// ninth session kept (the tags' weight 1.5 → 3) no longer holds on each
// fold: reversed, it must raise neither fold's mean. It reads no
// held-out set. Not run by default (two minutes):
//
//	BLINDEXEC_FOLD_WEIGHTS=1 go test ./toolsearch/searcheval -run TestFoldWeights -v
func TestFoldWeights(t *testing.T) {
	e, sets := optIn(t, "BLINDEXEC_FOLD_WEIGHTS", "measure weight steps per fold of the tuned-on halves (minutes)")
	settings := []struct {
		name string
		set  func(w *toolsearch.Weights)
	}{
		{"defaults", func(*toolsearch.Weights) {}},
		{reversed, func(w *toolsearch.Weights) { w.Fields["tags"] = 1.5 }},
		{"parameter names 1.33", func(w *toolsearch.Weights) { w.Fields["parameter names"] = 1.33 }},
		{"vocabulary 0.375", func(w *toolsearch.Weights) { w.Vocabulary = 0.375 }},
		{"k1 1.6", func(w *toolsearch.Weights) { w.K1 = 1.6 }},
		{"title share 0.75", func(w *toolsearch.Weights) { w.Title = 0.75 }},
		{"parameter descriptions 0.15", func(w *toolsearch.Weights) { w.Fields["parameter descriptions"] = 0.15 }},
		{"description 0.9", func(w *toolsearch.Weights) { w.Fields["description"] = 0.9 }},
		{"translation 0.8", func(w *toolsearch.Weights) { w.Translation = 0.8 }},
		{"gloss 0 (the eighteenth session's step reversed)", func(w *toolsearch.Weights) { w.Gloss = 0 }},
	}
	var base [2]foldScore
	for i, s := range settings {
		w := toolsearch.DefaultWeights()
		s.set(&w)
		parts := toolsearch.AllParts
		parts.Weights = &w
		ix, err := toolsearch.NewWith(e.all.Plugins, parts)
		if err != nil {
			t.Fatal(err)
		}
		var fs [2]foldScore
		for _, set := range sets {
			for f := range fs {
				var cases []Case
				for j, cs := range e.cases[set] {
					if j%2 == f {
						cases = append(cases, cs)
					}
				}
				g := Evaluate(ix.Search, cases)
				fs[f].mean += g.MRR10 / float64(len(sets))
				fs[f].hits5 += int(g.Recall5*float64(g.N) + 0.5)
			}
		}
		if i == 0 {
			base = fs
		}
		t.Logf("%-50s %s | %s", s.name, fs[0].against(base[0]), fs[1].against(base[1]))
		for f := range fs {
			if s.name == reversed && fs[f].mean > base[f].mean+1e-9 {
				t.Errorf("fold %d: %s raises the mean MRR@10 %.4f → %.4f: the kept step does not generalize", f, s.name, base[f].mean, fs[f].mean)
			}
		}
	}
}

const reversed = "tags 1.5 (the ninth session's kept step reversed)"

type foldScore struct {
	mean  float64
	hits5 int
}

func (f foldScore) against(b foldScore) string {
	return fmt.Sprintf("mean MRR@10 %.4f (%+.4f), recall@5 %d (%+d)", f.mean, f.mean-b.mean, f.hits5, f.hits5-b.hits5)
}
