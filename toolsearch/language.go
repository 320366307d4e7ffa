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

// languageNames name a script's language as search_tools tells the model;
// Latin is taken for English (the vocabulary's, and most APIs').
var languageNames = [...]string{scriptLatin: "English", scriptHan: "Chinese", scriptKana: "Japanese", scriptHangul: "Korean", scriptCyrillic: "Russian"}

// scriptOf is the script of most of the letters of s (Japanese when it
// has kana, whatever its kanji).
func scriptOf(s string) script {
	var n [len(languageNames)]int
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

// catalogScripts are the scripts of at least one tool in fifty (and two
// tools) of ts, by the text of their titles and descriptions, most used
// first.
func catalogScripts(ts []toolText) []script {
	var n [len(languageNames)]int
	for i := range ts {
		n[scriptOf(ts[i].title+" "+firstRunes(ts[i].description, 200))]++
	}
	var out []script
	for s := scriptLatin; int(s) < len(n); s++ {
		if n[s] >= 2 && n[s]*50 >= len(ts) {
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
func (ix *Index) Languages() []string {
	out := make([]string, len(ix.scripts))
	for i, s := range ix.scripts {
		out[i] = languageNames[s]
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
