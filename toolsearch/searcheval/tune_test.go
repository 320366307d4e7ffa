package searcheval

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/toolsearch"
)

// TestTuneWeights tunes the ranking's weights jointly, by coordinate
// ascent (as RankLib's CoordinateAscent): for each weight in turn, a few
// multiplicative steps; the best step is kept when it raises the mean
// MRR@10 of the tuned-on halves (every set's, each set counting once,
// in the catalog of every set together) by minGain or more, raises it
// on two sets at least (one set's jump is not a ranking), and loses no
// tuned-on set a request of recall@5 against the default weights, nor
// the floors TestAloneAndTogether holds GitHub's and RuoYi's sets to
// alone; rounds repeat until none keeps a step. It reads the tuned-on
// halves only, never a held-out set: the setting it ends on is then
// measured once by TestAblation and TestAloneAndTogether
// (docs/tool-search.md, a ninth session). Not run by default:
//
//	BLINDEXEC_TUNE_WEIGHTS=1 go test ./toolsearch/searcheval -run TestTuneWeights -v -timeout 2h
//
// BLINDEXEC_TUNE_RESTARTS=n adds n restarts from the defaults with the
// weights in a shuffled order.
func TestTuneWeights(t *testing.T) {
	e, sets := optIn(t, "BLINDEXEC_TUNE_WEIGHTS", "tune the ranking's weights (minutes)")
	tn := &tuner{e: e, sets: sets}
	start := time.Now()
	base, err := tn.score(toolsearch.DefaultWeights())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("defaults (%v): %s", time.Since(start).Round(time.Millisecond), base.describe(sets, nil))
	if !base.alone {
		t.Fatal("the default weights miss the floors alone")
	}
	restarts, _ := strconv.Atoi(os.Getenv("BLINDEXEC_TUNE_RESTARTS"))
	for r := 0; r <= restarts; r++ {
		order := slices.Clone(tunables)
		if r > 0 {
			rand.New(rand.NewSource(int64(r))).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		w, s := tn.ascend(t, order, base)
		t.Logf("run %d ends on %s\n  %s", r, describeWeights(w), s.describe(sets, &base))
	}
}

// tunable is a weight the harness varies, with its bounds.
type tunable struct {
	name     string
	get      func(w *toolsearch.Weights) float64
	set      func(w *toolsearch.Weights, x float64)
	min, max float64
}

func weightOf(name string, p func(w *toolsearch.Weights) *float64, lo, hi float64) tunable {
	return tunable{name, func(w *toolsearch.Weights) float64 { return *p(w) },
		func(w *toolsearch.Weights, x float64) { *p(w) = x }, lo, hi}
}

func fieldWeight(name string) tunable {
	return tunable{"field " + name, func(w *toolsearch.Weights) float64 { return w.Fields[name] },
		func(w *toolsearch.Weights, x float64) { w.Fields[name] = x }, 0.05, 10}
}

// tunables are the weights tuned: a request's own word weighs 1, so the
// weights of the words it is widened with stay under 1 (a weight of 1
// would make them its own words); a ratio or a factor under 1 stays so.
// The keywords field is left out: no catalog of the sets has keywords.
var tunables = []tunable{
	weightOf("k1", func(w *toolsearch.Weights) *float64 { return &w.K1 }, 0.3, 4),
	fieldWeight("name"), fieldWeight("title"), fieldWeight("tags"), fieldWeight("description"),
	fieldWeight("path"), fieldWeight("method"), fieldWeight("parameter names"),
	fieldWeight("parameter descriptions"), fieldWeight("source"), fieldWeight("tag descriptions"),
	fieldWeight("response"),
	weightOf("vocabulary", func(w *toolsearch.Weights) *float64 { return &w.Vocabulary }, 0.1, 0.95),
	weightOf("lexicon", func(w *toolsearch.Weights) *float64 { return &w.Lexicon }, 0.05, 0.95),
	weightOf("broader", func(w *toolsearch.Weights) *float64 { return &w.Broader }, 0.02, 0.95),
	weightOf("gloss", func(w *toolsearch.Weights) *float64 { return &w.Gloss }, 0.02, 0.95),
	weightOf("translation", func(w *toolsearch.Weights) *float64 { return &w.Translation }, 0.1, 0.95),
	weightOf("chinese verb", func(w *toolsearch.Weights) *float64 { return &w.ChineseVerb }, 0.05, 0.95),
	weightOf("compound", func(w *toolsearch.Weights) *float64 { return &w.Compound }, 0.05, 1),
	weightOf("typo", func(w *toolsearch.Weights) *float64 { return &w.Typo }, 0.1, 0.95),
	weightOf("payload", func(w *toolsearch.Weights) *float64 { return &w.Payload }, 0.05, 0.95),
	weightOf("cjk char", func(w *toolsearch.Weights) *float64 { return &w.CJKChar }, 0.05, 0.95),
	weightOf("title share", func(w *toolsearch.Weights) *float64 { return &w.Title }, 0.1, 4),
	weightOf("action", func(w *toolsearch.Weights) *float64 { return &w.Action }, 0.05, 3),
	weightOf("addressed", func(w *toolsearch.Weights) *float64 { return &w.Addressed }, 0.05, 3),
	weightOf("source boost", func(w *toolsearch.Weights) *float64 { return &w.Source }, 1.1, 8),
	weightOf("deprecated", func(w *toolsearch.Weights) *float64 { return &w.Deprecated }, 0.05, 1),
	weightOf("diversity", func(w *toolsearch.Weights) *float64 { return &w.Diversity }, 0.5, 1),
}

// steps multiply a weight; minGain is the least rise of the mean MRR@10
// a step must bring (a fifth of one request's first place in a set of
// twenty, over ten sets).
var steps = []float64{0.5, 0.75, 0.9, 1.1, 1.33, 2}

const minGain = 0.001

// optIn skips a measurement CI never runs unless env is set, and
// returns the evaluation and its tuned-on sets.
func optIn(t *testing.T, env, what string) (*evaluation, []string) {
	t.Helper()
	if os.Getenv(env) == "" {
		t.Skipf("set %s=1 to %s", env, what)
	}
	e := loadEvaluation(t)
	return e, e.tunedOn()
}

// tunedOn are the names of the tuned-on sets, in order: never a
// held-out one.
func (e *evaluation) tunedOn() []string {
	var sets []string
	for set := range e.cases {
		if !strings.Contains(set, "heldout") {
			sets = append(sets, set)
		}
	}
	slices.Sort(sets)
	return sets
}

type tuner struct {
	e    *evaluation
	sets []string
}

// setScore is a tuned-on set's figures in the catalog of every set.
type setScore struct {
	mrr10 float64
	hits5 int // requests with their tool in the first five
}

type tuneScore struct {
	mean  float64 // of the sets' MRR@10
	sets  map[string]setScore
	alone bool // GitHub's and RuoYi's tuned-on sets hold their floors alone
}

// score ranks every tuned-on set with weights w.
func (tn *tuner) score(w toolsearch.Weights) (tuneScore, error) {
	parts := toolsearch.AllParts
	parts.Weights = &w
	ix, err := toolsearch.NewWith(tn.e.all.Plugins, parts)
	if err != nil {
		return tuneScore{}, err
	}
	s := tuneScore{sets: map[string]setScore{}, alone: true}
	for _, set := range tn.sets {
		f := Evaluate(ix.Search, tn.e.cases[set])
		s.sets[set] = setScore{f.MRR10, int(f.Recall5*float64(f.N) + 0.5)}
		s.mean += f.MRR10 / float64(len(tn.sets))
	}
	for set, floor := range before {
		src := strings.TrimSuffix(set, "-queries.json")
		if strings.Contains(set, "heldout") || tn.e.catalogs[src] == nil {
			continue
		}
		alone, err := toolsearch.NewWith(tn.e.catalogs[src].Plugins, parts)
		if err != nil {
			return tuneScore{}, err
		}
		if Evaluate(alone.Search, tn.e.cases[set]).Recall5 < floor-1e-9 {
			s.alone = false
		}
	}
	return s, nil
}

// ascend runs coordinate ascent from the defaults over the tunables in
// order, logging each step kept.
func (tn *tuner) ascend(t *testing.T, order []tunable, base tuneScore) (toolsearch.Weights, tuneScore) {
	best, bestScore := toolsearch.DefaultWeights(), base
	for round := 1; ; round++ {
		kept := false
		for _, p := range order {
			var cands []toolsearch.Weights
			for _, f := range steps {
				x := min(max(p.get(&best)*f, p.min), p.max)
				if x == p.get(&best) {
					continue
				}
				w := copyWeights(best)
				p.set(&w, x)
				cands = append(cands, w)
			}
			scores, err := tn.scoreAll(cands)
			if err != nil {
				t.Fatal(err)
			}
			pick, top := -1, -1
			for i, s := range scores {
				if tn.refusal(s, base, bestScore) == "" && (pick < 0 || s.mean > scores[pick].mean) {
					pick = i
				}
				if top < 0 || s.mean > scores[top].mean {
					top = i
				}
			}
			if pick >= 0 {
				t.Logf("round %d: %s %.3g → %.3g: %s", round, p.name, p.get(&best), p.get(&cands[pick]),
					scores[pick].describe(tn.sets, &bestScore))
				best, bestScore, kept = cands[pick], scores[pick], true
			} else if top >= 0 {
				t.Logf("round %d: %s stays %.3g; its best step, %.3g, %s: %s", round, p.name, p.get(&best),
					p.get(&cands[top]), tn.refusal(scores[top], base, bestScore), scores[top].describe(tn.sets, &bestScore))
			}
		}
		if !kept {
			return best, bestScore
		}
	}
}

// refusal is why s is no step from cur ("" when it is one): it must
// raise the mean MRR@10 by minGain, on two sets at least, and keep every
// set's recall@5 of base and the floors alone.
func (tn *tuner) refusal(s, base, cur tuneScore) string {
	if !s.alone {
		return "under a floor alone"
	}
	rises := 0
	for _, set := range tn.sets {
		if s.sets[set].hits5 < base.sets[set].hits5 {
			return "loses recall@5 on " + set
		}
		if s.sets[set].mrr10 > cur.sets[set].mrr10+1e-9 {
			rises++
		}
	}
	switch {
	case s.mean < cur.mean+minGain:
		return "gains too little"
	case rises < 2:
		return "raises one set only"
	}
	return ""
}

// scoreAll scores ws, two at a time (the machine has two cores).
func (tn *tuner) scoreAll(ws []toolsearch.Weights) ([]tuneScore, error) {
	out := make([]tuneScore, len(ws))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range ws {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			out[i], errs[i] = tn.score(ws[i])
			<-sem
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func copyWeights(w toolsearch.Weights) toolsearch.Weights {
	w.Fields = maps.Clone(w.Fields)
	return w
}

// describe is s's mean and each set's MRR@10 and recall@5 (requests),
// with their change from than when given.
func (s tuneScore) describe(sets []string, than *tuneScore) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mean MRR@10 %.4f", s.mean)
	for _, set := range sets {
		x := s.sets[set]
		fmt.Fprintf(&b, "; %s %.3f/%d", strings.TrimSuffix(set, "-queries.json"), x.mrr10, x.hits5)
		if than != nil {
			if d := x.mrr10 - than.sets[set].mrr10; d > 1e-9 || d < -1e-9 {
				fmt.Fprintf(&b, " (%+.3f", d)
				if h := x.hits5 - than.sets[set].hits5; h != 0 {
					fmt.Fprintf(&b, ", %+d", h)
				}
				b.WriteString(")")
			}
		}
	}
	return b.String()
}

func describeWeights(w toolsearch.Weights) string {
	d := toolsearch.DefaultWeights()
	var diff []string
	for _, p := range tunables {
		if x := p.get(&w); x != p.get(&d) {
			diff = append(diff, fmt.Sprintf("%s %.3g (was %.3g)", p.name, x, p.get(&d)))
		}
	}
	if len(diff) == 0 {
		return "the defaults"
	}
	return strings.Join(diff, ", ")
}
