// Package toolsearch finds the few tools of a large catalog that fit a
// request in people's words (seed 004's action recall): an in-memory index
// over every enabled plugin, queried without I/O, swapped whole when the
// catalog changes.
//
// Ranking is BM25F: a term's frequency in each field of a tool (name,
// title, tags, keywords, description, path, method, parameters) is
// weighted and length-normalized per field, summed, then saturated once,
// so a word in the title counts more than the same word deep in a
// parameter's description, and repeating it does not add without bound.
// A request's own words also match the catalog's words that extend them
// by a letter or two (widen). The sum is then multiplied by how well the
// tool fits what the request asks (fit): a tool that does what it asks
// (its title's verb or its HTTP method in the group of the request's
// verb) scores half as much again, one whose title the request says in
// full twice as much (in part, in proportion), one that addresses a thing
// the request numbers ("issue 10") 30% more, a deprecated one half.
// Last, a request that names no API has its first five diversified by
// source (diversify): one API's look-alikes do not fill them whole.
package toolsearch

import (
	"container/heap"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/blindexec/blindexec/plugins"
)

// Result is one matching tool, best first in a Search answer.
type Result struct {
	Name   string
	Title  string
	Score  float64
	Plugin *plugins.Plugin
}

// DefaultLimit is the number of results when the caller gives none.
const DefaultLimit = 5

// MaxLimit bounds the results of one search.
const MaxLimit = 50

// k1 saturates the (pseudo-)frequency of a term: BM25's usual value. A
// sweep of k1 and the field weights on the labelled requests gained a few
// of them and lost more of the held-out ones (docs/tool-search.md): the values here
// are the textbook ones, not fitted.
const k1 = 1.2

// titleBoost multiplies the score of a tool by one plus this share of its
// title's words the request names (its own words or their synonyms): the
// title says what the tool does in a few words, and a request that says
// them ("create a repo" of "Create a repository") is about that tool more
// surely than about one sharing a rarer word of the request ("private").
// A BM25 sum cannot see it: "repository" is in most of GitHub's tools,
// and weighs almost nothing there.
const titleBoost = 1.0

// deprecatedFactor multiplies the score of a deprecated tool: when a
// deprecated operation and its replacement fit a request alike ("Add team
// member (Legacy)" and "Add or update team membership for a user"), the
// replacement should come first.
const deprecatedFactor = 0.5

// isDeprecated: the OpenAPI importer starts a deprecated operation's
// description with "Deprecated:"; APIs also mark a title "(Legacy)" or
// "(Deprecated)".
func isDeprecated(p *plugins.Plugin) bool {
	t := strings.ToLower(p.Title)
	return strings.HasPrefix(strings.ToLower(p.Description), "deprecated") ||
		strings.Contains(t, "(deprecated)") || strings.Contains(t, "(legacy)")
}

// Index is an immutable search index over one catalog snapshot; Search is
// safe for concurrent use and does no I/O.
type Index struct {
	an          analyzer
	parts       Parts
	w           Weights
	docs        []*plugins.Plugin
	actions     []actions         // of each doc
	deprecated  []bool            // of each doc
	title       [][]int32         // of each doc: its title's terms
	titleVerbs  [][]int32         // of each doc: the terms of its title's verbs (titleVerbs)
	addressed   [][]int32         // of each doc: the terms of what it addresses one of (addressedTerms)
	terms       map[string]int32  // term → its postings
	words       map[string]string // the catalog's words of typoMin-1 letters or more → their term (correct)
	sorted      []string          // the terms in order, for prefixes (widen)
	postings    [][]posting
	scripts     []script // of the tools' texts, most used first (Languages)
	toolScripts []script // of each doc's title and description's start (LanguagesWithin)
	sources     []indexedSource
	docSource   []int32  // of each doc: its source in sources, -1 for none
	docScript   []script // of each doc: the script of its title and description
	idf         []float64
	written     *writtenField // the requests a model wrote (Parts.Expansion), nil for none
	scratch     sync.Pool     // *scratch
	verbsOnce   sync.Once
	zhByVerb    map[string][]string // a verb → the catalog's Chinese words whose verb glosses start with it (byVerb)
}

// scratch are a search's accumulators, one per document, all zero
// between searches: the score so far, and the best term of the concept
// at hand.
type scratch struct {
	acc, best     []float64
	written       []float64         // the written field's score so far
	wtouched      []int32           // the documents it scored
	touched, seen []int32           // the documents scored so far, and by the concept at hand
	plugins       []*plugins.Plugin // the matches asked of a Filter
}

// posting is a term's weighted, length-normalized frequency in one tool,
// summed over the fields (BM25F's pseudo-frequency tf), saturated:
// tf·(k1+1)/(k1+tf). A search multiplies it by the term's idf.
type posting struct {
	doc int32
	sat float32
}

// New indexes the enabled plugins of ps. The plugins are shared, not
// copied: callers must not modify them afterwards.
func New(ps []*plugins.Plugin) (*Index, error) { return NewWith(ps, AllParts) }

// Parts are the parts of issue 49 an index uses; the evaluation measures
// each alone (docs/tool-search.md's ablation). New uses them all.
type Parts struct {
	Sources   bool // sources and tag descriptions indexed, a named source first
	Lexicon   bool // WordNet's synonyms and related words
	Bilingual bool // CC-CEDICT: a request's words in the catalog's other language
	Responses bool // the names of what a tool answers, a weak field
	// Expansion, when set, adds the requests a model wrote for each tool
	// as a weak field of capped weight (point 4).
	Expansion *Expansion
	// Weights, when set, replace DefaultWeights (the evaluation's tuning).
	Weights *Weights
}

// AllParts is every part.
var AllParts = Parts{Sources: true, Lexicon: true, Bilingual: true, Responses: true}

// NewWith is New with only the parts given.
func NewWith(ps []*plugins.Plugin, parts Parts) (*Index, error) {
	// The tables are decompressed once, here rather than in a search (the
	// build runs in the background; about 8 MB of heap, for the process).
	if parts.Lexicon && len(ps) > 0 {
		wordnetTable.load()
	}
	if parts.Bilingual && len(ps) > 0 {
		cedictTable.load()
		ecdictTable.load()
	}
	w := DefaultWeights()
	if parts.Weights != nil {
		w = *parts.Weights
	}
	fields := weighted(engineFields, &w)
	if parts.Sources {
		fields = append(fields, weighted(sourceFields, &w)...)
	}
	var weak []field
	if parts.Responses {
		weak = weighted([]field{responseField}, &w)
	}
	ix, err := build(ps, analyzer{words: parts.Bilingual}, fields, weak, w)
	if err != nil {
		return nil, err
	}
	ix.parts = parts
	if parts.Sources {
		ix.indexSources(ix.an)
	}
	if parts.Expansion != nil {
		ix.indexRequests(parts.Expansion)
	}
	return ix, nil
}

// NewBaseline indexes the enabled plugins of ps the plain way: BM25 over
// name, title and description with a standard analyzer (lowercase, split
// on what is not a letter or digit, one term per CJK character), no
// vocabulary. It is the yardstick the runner compares New against.
func NewBaseline(ps []*plugins.Plugin) (*Index, error) {
	return build(ps, analyzer{plain: true}, baselineFields, nil, DefaultWeights())
}

// build indexes ps by fields, and by the weak fields (weakTerms): words
// a tool's own text does not say, which lift it a little and never
// change a term's idf; w are its weights.
func build(ps []*plugins.Plugin, an analyzer, fields, weak []field, w Weights) (*Index, error) {
	ix := &Index{an: an, w: w, terms: map[string]int32{}}
	ix.an.w = &ix.w
	k1 := w.K1
	for _, p := range ps {
		if p != nil && p.Enabled() {
			ix.docs = append(ix.docs, p)
		}
	}
	// Per field: each document's term counts and length, then the average
	// length for normalization.
	tools := make([]toolText, len(ix.docs))
	for d, p := range ix.docs {
		tools[d] = newToolText(p)
	}
	if an.words {
		// the language of each tool, which a translation must be in
		ix.docScript = make([]script, len(ix.docs))
		for d := range tools {
			ix.docScript[d] = scriptOf(tools[d].title + " " + tools[d].description)
		}
	}
	// Building stems each distinct word once.
	builder := ix.an
	builder.stems = map[string]string{}
	perField := make([][]fieldDoc, len(fields))
	for f, fd := range fields {
		perField[f] = make([]fieldDoc, len(ix.docs))
		texts := make([][]string, len(ix.docs))
		for d := range ix.docs {
			texts[d] = fd.text(&tools[d])
		}
		if fd.boilerplate {
			texts = dropBoilerplate(texts)
		}
		for d := range ix.docs {
			counts := map[string]int{}
			n := 0
			for _, text := range texts[d] {
				builder.each(text, func(t string, _ int) {
					counts[t]++
					n++
				})
			}
			perField[f][d] = fieldDoc{counts, n}
		}
	}
	// the weak fields after the others, kept to the terms weakTerms keeps
	strongFields := len(fields)
	for _, fd := range weak {
		fields = append(slices.Clip(fields), fd)
		perField = append(perField, weakTerms(perField[:strongFields], fd, tools, builder))
	}
	avg := make([]float64, len(fields))
	for f := range fields {
		total := 0
		for _, fd := range perField[f] {
			total += fd.length
		}
		avg[f] = math.Max(float64(total)/math.Max(float64(len(ix.docs)), 1), 1)
	}
	var df []int // documents whose own fields (not the weak ones) have the term
	for d := range ix.docs {
		tf := map[string]float64{}
		for f, fd := range fields {
			doc := perField[f][d]
			norm := 1 - fd.b + fd.b*float64(doc.length)/avg[f]
			for t, c := range doc.counts {
				tf[t] += fd.weight * float64(c) / norm
			}
		}
		for t, w := range tf {
			id, ok := ix.terms[t]
			if !ok {
				id = int32(len(ix.postings))
				ix.terms[t] = id
				ix.postings = append(ix.postings, nil)
				df = append(df, 0)
			}
			if strongFields == len(fields) || ownTerm(perField[:strongFields], d, t) {
				df[id]++
			}
			ix.postings[id] = append(ix.postings[id], posting{int32(d), float32(w * (k1 + 1) / (k1 + w))})
		}
	}
	ix.actions = make([]actions, len(ix.docs))
	ix.title = make([][]int32, len(ix.docs))
	ix.titleVerbs = make([][]int32, len(ix.docs))
	ix.addressed = make([][]int32, len(ix.docs))
	ix.deprecated = make([]bool, len(ix.docs))
	if !an.plain {
		for d, p := range ix.docs {
			ix.actions[d] = toolActions(p, tools[d].title)
			ix.deprecated[d] = isDeprecated(p)
			for _, t := range addressedTerms(builder, p) {
				if id, ok := ix.terms[t]; ok && !slices.Contains(ix.addressed[d], id) {
					ix.addressed[d] = append(ix.addressed[d], id)
				}
			}
			builder.each(tools[d].title, func(t string, kind int) {
				if id, ok := ix.terms[t]; ok && kind != kindCJKChar && !slices.Contains(ix.title[d], id) {
					ix.title[d] = append(ix.title[d], id)
				}
			})
			for _, w := range titleVerbs(tools[d].title) {
				builder.each(w, func(t string, kind int) {
					if id, ok := ix.terms[t]; ok && !slices.Contains(ix.titleVerbs[d], id) {
						ix.titleVerbs[d] = append(ix.titleVerbs[d], id)
					}
				})
			}
		}
		ix.toolScripts = toolScripts(tools)
		ix.scripts = catalogScripts(ix.toolScripts, nil)
		ix.words = map[string]string{}
		for w, st := range builder.stems {
			if t := canonical(st); len(w) >= typoMin-1 && isASCIILetters(w) {
				if _, ok := ix.terms[t]; ok {
					ix.words[w] = t
				}
			}
		}
		ix.sorted = make([]string, 0, len(ix.terms))
		for t := range ix.terms {
			ix.sorted = append(ix.sorted, t)
		}
		sort.Strings(ix.sorted)
	}
	n := float64(len(ix.docs))
	ix.idf = make([]float64, len(ix.postings))
	for id := range ix.postings {
		df := float64(df[id])
		ix.idf[id] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	ix.scratch.New = func() any {
		return &scratch{acc: make([]float64, len(ix.docs)), best: make([]float64, len(ix.docs)), written: make([]float64, len(ix.docs))}
	}
	return ix, nil
}

// Porter2 leaves derived words apart ("register" → regist,
// "registration" → registr; "commit", "committer"): a request's own word of
// prefixMin letters or more also matches, at synonym weight, the terms of
// the catalog that extend it by prefixExtra letters at most.
const (
	prefixMin   = 5
	prefixExtra = 2
)

// widen adds to each concept of a request's own English word the terms
// of the catalog that extend it.
func (ix *Index) widen(concepts []concept) {
	for i, c := range concepts {
		t := c[0].term
		if r, _ := utf8.DecodeRuneInString(t); c[0].weight < 1 || len(t) < prefixMin || isCJK(r) {
			continue
		}
		for j := sort.SearchStrings(ix.sorted, t); j < len(ix.sorted) && strings.HasPrefix(ix.sorted[j], t); j++ {
			if u := ix.sorted[j]; u != t && len(u) <= len(t)+prefixExtra {
				concepts[i] = concepts[i].with(qterm{term: u, weight: ix.w.Vocabulary})
			}
		}
	}
}

// Len is the number of indexed tools.
func (ix *Index) Len() int { return len(ix.docs) }

// Search returns at most limit tools matching query, best first; ties go
// by name; the first five diversified by source (diversify). A request
// none of whose words (nor their synonyms in its own script) any tool has
// finds nothing (speaks). A limit of zero or less means DefaultLimit;
// above MaxLimit, MaxLimit.
func (ix *Index) Search(query string, limit int) []Result {
	if limit <= 0 {
		limit = DefaultLimit
	}
	rs, _ := ix.Rank(query, min(limit, MaxLimit))
	return rs
}

// Rank returns the best n tools matching query, best first (ties by
// name), and how many match in all: the pages of a search's results. An
// n of zero or less ranks every match.
func (ix *Index) Rank(query string, n int) ([]Result, int) {
	rs, total, _ := ix.RankUsable(query, n, nil)
	return rs, total
}

// Filter narrows a search's matching tools to those its caller may use.
// An error refuses the search.
type Filter struct {
	// Keep returns those of ps it keeps, in their order
	// (access.Checker.Usable does), and must not keep ps. Required.
	Keep func(ps []*plugins.Plugin) ([]*plugins.Plugin, error)
	// Set, when not nil, answers instead of Keep for the index's whole
	// list of tools (one list, never changed, for as long as the index
	// lives) which of them, by position, the caller may use: an answer
	// the caller may keep per list (access.Checker.UsableSet does), so
	// that a search tests one bit per match instead of deciding each.
	Set func(all []*plugins.Plugin) (Set, error)
}

// Set is the positions in an index's list of tools a caller may use.
type Set interface{ Has(i int) bool }

// Results are those of rs f keeps (every one when f is nil), in order:
// for results ranked without f.
func (f *Filter) Results(rs []Result) ([]Result, error) {
	if f == nil {
		return rs, nil
	}
	ps := make([]*plugins.Plugin, len(rs))
	for i := range rs {
		ps[i] = rs[i].Plugin
	}
	kept, err := f.Keep(ps)
	if err != nil {
		return nil, err
	}
	out := rs[:0:0]
	for _, r := range rs {
		if len(kept) > 0 && kept[0] == r.Plugin {
			out, kept = append(out, r), kept[1:]
		}
	}
	return out, nil
}

// RankUsable is Rank over the matches usable keeps (nil: every one),
// asked once per search with every match: the n returned are the best
// usable ones, the total counts the usable matches, and a tool usable
// refuses is neither ranked nor counted, so that a page is full and
// pages are slices of one ranking. When usable keeps every match, the
// search costs what Rank's does, plus the call.
func (ix *Index) RankUsable(query string, n int, usable *Filter) ([]Result, int, error) {
	concepts := ix.an.analyzeQuery(query)
	if len(concepts) == 0 || len(ix.docs) == 0 {
		return nil, 0, nil
	}
	limit := n
	if limit <= 0 {
		limit = len(ix.docs)
	} else if ix.docSource != nil {
		limit = max(limit, diversityWindow) // diversify's candidates
	}
	if !ix.an.plain {
		ix.widen(concepts)
		ix.correct(query, concepts)
		speaks := ix.speaks(scriptOf(query), concepts)
		if ix.parts.Lexicon {
			concepts = ix.expandLexicon(query, concepts)
			ix.joinCompounds(query, concepts)
		}
		translated := false
		if ix.parts.Bilingual {
			concepts, translated = ix.translate(query, concepts)
		}
		if !speaks && !translated {
			return nil, 0, nil
		}
	}
	sp := ix.scratch.Get().(*scratch)
	acc, best := sp.acc, sp.best
	touched, seen := sp.touched[:0], sp.seen[:0]
	for _, c := range concepts {
		if len(c) == 1 && c[0].lang == scriptNone {
			// One term: its score is the concept's, no best to keep.
			if id, ok := ix.terms[c[0].term]; ok {
				w := c[0].weight * ix.idf[id]
				for _, p := range ix.postings[id] {
					if acc[p.doc] == 0 {
						touched = append(touched, p.doc)
					}
					acc[p.doc] += w * float64(p.sat)
				}
			}
			continue
		}
		seen = seen[:0]
		for _, qt := range c {
			id, ok := ix.terms[qt.term]
			if !ok {
				continue
			}
			w := qt.weight * ix.idf[id]
			for _, p := range ix.postings[id] {
				if qt.lang != scriptNone && ix.docScript[p.doc] != qt.lang {
					continue
				}
				s := w * float64(p.sat)
				if best[p.doc] == 0 {
					seen = append(seen, p.doc)
				}
				best[p.doc] = max(best[p.doc], s)
			}
		}
		for _, d := range seen {
			if acc[d] == 0 {
				touched = append(touched, d)
			}
			acc[d] += best[d]
			best[d] = 0
		}
	}
	touched = ix.addWritten(concepts, sp, touched)
	if usable != nil {
		var err error
		if touched, err = ix.keepUsable(sp, touched, usable); err != nil {
			sp.touched, sp.seen = touched[:0], seen
			ix.scratch.Put(sp)
			return nil, 0, err
		}
	}
	var rq request
	if !ix.an.plain {
		rq = ix.request(query, concepts)
	}
	// The title share multiplies a score by at most 1+titleBoost, and
	// costs the most of fit: a tool whose score could not reach the
	// limit-th best lower bound (every factor but the title share) even
	// with the whole share is passed over without it.
	floor := 0.0
	if !ix.an.plain {
		lower := topK[float64]{items: make([]float64, 0, limit+1), worse: func(a, b float64) bool { return a < b }}
		for _, d := range touched {
			acc[d] *= ix.fitExceptTitle(d, &rq)
			lower.keep(acc[d], limit)
		}
		if len(lower.items) == limit {
			floor = lower.items[0]
		}
		if n > 0 && limit > n && len(lower.items) >= n {
			// The window diversify looks into is deeper than the n
			// asked, but its candidates score diversityRatio of the
			// first at least: a tool that can reach neither the n-th
			// place nor that is passed over too.
			bounds := slices.Sorted(slices.Values(lower.items))
			nth, first := bounds[len(bounds)-n], bounds[len(bounds)-1]
			floor = max(floor, min(nth, ix.w.Diversity*first))
		}
	}
	top := topK[hit]{items: make([]hit, 0, limit+1), worse: ix.worseHit}
	for _, d := range touched {
		score := acc[d]
		acc[d] = 0
		if !ix.an.plain {
			if score*(1+ix.w.Title) < floor {
				continue
			}
			score *= ix.titleShare(d, &rq)
		}
		if len(top.items) == limit && score < top.items[0].score {
			continue
		}
		top.keep(hit{d, score}, limit)
	}
	sp.touched, sp.seen = touched, seen
	ix.scratch.Put(sp)
	hits := top.items
	sort.Slice(hits, func(i, j int) bool { return ix.worseHit(hits[j], hits[i]) })
	ix.diversify(hits, &rq)
	if n > 0 {
		hits = hits[:min(n, len(hits))]
	}
	out := make([]Result, len(hits))
	for i, h := range hits {
		p := ix.docs[h.doc]
		out[i] = Result{Name: p.Name, Title: p.Title, Score: h.score, Plugin: p}
	}
	return out, len(touched), nil
}

// fieldDoc is a document's term counts in one field, and its length.
type fieldDoc struct {
	counts map[string]int
	length int
}

// hit is a scored document of a search.
type hit struct {
	doc   int32
	score float64
}

// worseHit orders hits as worse orders results.
func (ix *Index) worseHit(a, b hit) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return ix.docs[a.doc].Name > ix.docs[b.doc].Name
}

// keepUsable narrows touched to the documents usable keeps, in place,
// clearing the others' scores (every score when usable fails, so that
// the scratch is clean).
func (ix *Index) keepUsable(sp *scratch, touched []int32, usable *Filter) ([]int32, error) {
	if usable.Set != nil {
		set, err := usable.Set(ix.docs)
		out := touched[:0]
		for _, d := range touched {
			if err == nil && set.Has(int(d)) {
				out = append(out, d)
			} else {
				sp.acc[d] = 0
			}
		}
		return out, err
	}
	ps := sp.plugins[:0]
	for _, d := range touched {
		ps = append(ps, ix.docs[d])
	}
	kept, err := usable.Keep(ps)
	clear(ps) // the scratch holds no plugin between searches
	sp.plugins = ps[:0]
	switch {
	case err != nil:
		for _, d := range touched {
			sp.acc[d] = 0
		}
		return touched[:0], err
	case len(kept) == len(touched):
		return touched, nil
	}
	out := touched[:0]
	for _, d := range touched {
		if len(kept) > 0 && kept[0] == ix.docs[d] {
			out, kept = append(out, d), kept[1:]
		} else {
			sp.acc[d] = 0
		}
	}
	return out, nil
}

// request is what a search knows of a request beyond its concepts.
type request struct {
	actions  actions
	sources  []int32 // the sources it names
	named    []int32 // the terms of the request's own words and their synonyms
	numbered []int32 // the terms of what the request gives a number of
	verbs    []int32 // the terms of the verb it starts with (leadingVerb)
}

func (ix *Index) request(query string, concepts []concept) request {
	rq := request{actions: queryActions(query), sources: ix.namedSources(query), verbs: ix.leadingVerb(query, concepts)}
	if ix.parts.Lexicon && (rq.actions == 0 || rq.actions == imperativeActions) {
		// a phrasal verb's actions over none, or over the guess that a
		// request starting with a verb of its own makes or changes
		// something ("kick Ann out of the chat room" removes)
		ask, _ := splitPayload(query)
		if a := phrasalActions(ask); a != 0 {
			rq.actions = a
		}
	}
	for _, t := range numberedTerms(ix.an, query) {
		if id, ok := ix.terms[t]; ok {
			rq.numbered = append(rq.numbered, id)
		}
	}
	for _, c := range concepts {
		for _, qt := range c {
			if id, ok := ix.terms[qt.term]; ok && qt.weight >= ix.w.Vocabulary && !slices.Contains(rq.named, id) {
				rq.named = append(rq.named, id)
			}
		}
	}
	return rq
}

// fitExceptTitle is the factor of document d's score for what rq asks,
// but the title share (titleShare): its action, the thing it numbers;
// deprecation.
func (ix *Index) fitExceptTitle(d int32, rq *request) float64 {
	f := 1.0
	if ix.actions[d]&rq.actions != 0 {
		f *= 1 + ix.w.Action
	}
	for _, id := range rq.numbered {
		if slices.Contains(ix.addressed[d], id) {
			f *= 1 + ix.w.Addressed
			break
		}
	}
	if ix.deprecated[d] {
		f *= ix.w.Deprecated
	}
	if len(rq.sources) > 0 && slices.Contains(rq.sources, ix.docSource[d]) {
		f *= ix.w.Source
	}
	return f
}

// titleShare is the factor of document d's score for the share of its
// title rq names, from 1 to 1+titleBoost.
func (ix *Index) titleShare(d int32, rq *request) float64 {
	title := ix.title[d]
	if len(title) == 0 {
		return 1
	}
	n := 0
	for _, id := range title {
		// the request's verb names a title's verb, not a noun of it:
		// "show me our ledger codes" says nothing of Spotify's *Get Show*
		if slices.Contains(rq.named, id) && (!slices.Contains(rq.verbs, id) || slices.Contains(ix.titleVerbs[d], id)) {
			n++
		}
	}
	return 1 + ix.w.Title*float64(n)/float64(len(title))
}

// leadingVerb is the terms of the verb a request starts with, when the
// vocabulary knows it as an action ("show me our ledger codes", "add
// alice to #design"): the verb and its group's other verbs, those no other
// concept of the request has ("list my saved shows" asks for shows).
func (ix *Index) leadingVerb(query string, concepts []concept) []int32 {
	ask, _ := splitPayload(query)
	keys := vocabKeys(ask)
	if len(keys) == 0 || !isASCIILetters(keys[0].text) || lookupAction(keys[0].text) == 0 {
		return nil
	}
	i := ownConcept(concepts, canonical(ix.an.normalize(keys[0].text)))
	if i < 0 {
		return nil
	}
	var out []int32
	for _, qt := range concepts[i] {
		id, ok := ix.terms[qt.term]
		if !ok || !isASCIILetters(qt.term) || lookupAction(qt.term) == 0 || slices.Contains(out, id) {
			continue
		}
		other := false
		for j, c := range concepts {
			other = other || j != i && slices.ContainsFunc(c, func(o qterm) bool { return o.term == qt.term })
		}
		if !other {
			out = append(out, id)
		}
	}
	return out
}

// titleVerbs are the words of an English title in a verb's place: its
// first, and each joined to one by "or" or "and" (*Create or update an
// environment*, *Get and set a topic*).
func titleVerbs(title string) []string {
	var words []string
	scan(title, func(w string) { words = append(words, strings.ToLower(w)) }, func(string) { words = append(words, "") })
	var out []string
	for i := 0; i < len(words) && words[i] != ""; i += 2 {
		out = append(out, words[i])
		if i+1 >= len(words) || words[i+1] != "or" && words[i+1] != "and" {
			break
		}
	}
	return out
}

// worse orders results: lower score, then later name.
func worse(a, b Result) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Name > b.Name
}

// topK keeps the best items seen, at most a limit of them, the worst
// on top.
type topK[T any] struct {
	items []T
	worse func(a, b T) bool
}

// keep adds x if there is room or it beats the worst kept.
func (h *topK[T]) keep(x T, limit int) {
	if len(h.items) < limit {
		heap.Push(h, x)
	} else if h.worse(h.items[0], x) {
		h.items[0] = x
		heap.Fix(h, 0)
	}
}

func (h *topK[T]) Len() int           { return len(h.items) }
func (h *topK[T]) Less(i, j int) bool { return h.worse(h.items[i], h.items[j]) }
func (h *topK[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *topK[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *topK[T]) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
