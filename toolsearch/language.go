package toolsearch

import "unicode"

// A keyword index matches words, not meanings: a request in Chinese finds
// no tool described in English (the vocabulary's few verbs aside). The
// index knows which languages its tools are written in, by script, so
// that search_tools can tell the model to search in those, and a request
// none of whose words are in any tool's language finds nothing rather
// than what the vocabulary's translations of its verbs happen to match.

// script is a writing system of the catalog's languages.
type script uint8

const (
	scriptNone script = iota
	scriptLatin
	scriptHan
	scriptKana // Japanese
	scriptHangul
	scriptCyrillic
)

// languageName names a script's language as search_tools tells the model;
// Latin is taken for English (the vocabulary's, and most APIs').
var languageName = [...]string{scriptLatin: "English", scriptHan: "Chinese", scriptKana: "Japanese", scriptHangul: "Korean", scriptCyrillic: "Russian"}

// scriptOf is the script of most of the letters of s (Japanese when it
// has kana, whatever its kanji).
func scriptOf(s string) script {
	var n [len(languageName)]int
	for _, r := range s {
		switch {
		case r < 0x80:
			if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
				n[scriptLatin]++
			}
		case unicode.Is(unicode.Han, r):
			n[scriptHan]++
		case unicode.In(r, unicode.Hiragana, unicode.Katakana):
			n[scriptKana] += 4 // kana mark Japanese even among many kanji
		case unicode.Is(unicode.Hangul, r):
			n[scriptHangul]++
		case unicode.Is(unicode.Cyrillic, r):
			n[scriptCyrillic]++
		case unicode.Is(unicode.Latin, r):
			n[scriptLatin]++
		}
	}
	// A CJK character says as much as a word of Latin letters.
	n[scriptLatin] /= 5
	best := scriptNone
	for s := scriptLatin; int(s) < len(n); s++ {
		if n[s] > n[best] {
			best = s
		}
	}
	return best
}

// toolScripts are the script of each of ts, by the text of its title and
// description: what catalogScripts counts.
func toolScripts(ts []toolText) []script {
	out := make([]script, len(ts))
	for i := range ts {
		out[i] = scriptOf(ts[i].title + " " + firstRunes(ts[i].description, 200))
	}
	return out
}

// catalogScripts are the scripts of at least one tool in fifty (and two
// tools) of those whose scripts of ts keep keeps (nil: all), most used
// first.
func catalogScripts(ts []script, keep func(i int) bool) []script {
	var n [len(languageName)]int
	total := 0
	for i, s := range ts {
		if keep == nil || keep(i) {
			n[s]++
			total++
		}
	}
	var out []script
	for s := scriptLatin; int(s) < len(n); s++ {
		if n[s] >= 2 && n[s]*50 >= total {
			out = append(out, s)
		}
	}
	// Most used first.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && n[out[j]] > n[out[j-1]]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// Languages are the languages the catalog's tools are written in, most
// used first: English, Chinese, Japanese, Korean, Russian.
func (ix *Index) Languages() []string { return languageNames(ix.scripts) }

// LanguagesWithin are Languages of the tools usable keeps (nil: every
// one): what search_tools tells a caller who may use some of the catalog,
// so that the languages of tools hidden from it are not named.
func (ix *Index) LanguagesWithin(usable *Filter) ([]string, error) {
	if usable == nil {
		return ix.Languages(), nil
	}
	if usable.Set != nil {
		set, err := usable.Set(ix.docs)
		if err != nil {
			return nil, err
		}
		return languageNames(catalogScripts(ix.toolScripts, set.Has)), nil
	}
	kept, err := usable.Keep(ix.docs)
	if err != nil {
		return nil, err
	}
	// Keep keeps the order: the kept are walked alongside.
	in := make([]bool, len(ix.docs))
	for d, p := range ix.docs {
		if len(kept) > 0 && kept[0] == p {
			in[d], kept = true, kept[1:]
		}
	}
	return languageNames(catalogScripts(ix.toolScripts, func(d int) bool { return in[d] })), nil
}

func languageNames(ss []script) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = languageName[s]
	}
	return out
}

// termScript is the script of an index term: CJK terms are Han (a
// kana or Hangul pair is its own), others Latin.
func termScript(t string) script {
	for _, r := range t {
		switch {
		case unicode.In(r, unicode.Hiragana, unicode.Katakana):
			return scriptKana
		case unicode.Is(unicode.Hangul, r):
			return scriptHangul
		case unicode.Is(unicode.Han, r):
			return scriptHan
		case unicode.Is(unicode.Cyrillic, r):
			return scriptCyrillic
		}
	}
	return scriptLatin
}

// compatible: a request in script q can be matched by a term of script t
// (Japanese writes with kanji as well as kana).
func compatible(q, t script) bool {
	cjk := func(s script) bool { return s == scriptHan || s == scriptKana }
	return q == t || cjk(q) && cjk(t)
}

// speaks reports whether some term of concepts that the catalog has is in
// the script of the request (scriptNone: any): whether the request's own
// language matches any tool text, beyond the vocabulary's translations.
func (ix *Index) speaks(qs script, concepts []concept) bool {
	for _, c := range concepts {
		for _, qt := range c {
			_, ok := ix.terms[qt.term]
			if !ok && ix.written != nil { // a word only a model's written request has
				_, ok = ix.written.terms[qt.term]
			}
			if ok && (qs == scriptNone || compatible(qs, termScript(qt.term))) {
				return true
			}
		}
	}
	return false
}
