package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
)

// analyzer turns text into index terms. The engine's analyzer splits
// identifiers (camelCase, snake_case, kebab-case), drops English stop words
// and numbers, stems English words (Porter2) and cuts runs of Chinese,
// Japanese or Korean characters into single characters and overlapping
// pairs (CJK bigrams): Chinese has no spaces, and a pair of characters is
// the usual unit of a word, so "删除用户" and "用户删除" share "用户" and
// "删除". The plain analyzer, the baseline the runner compares against,
// only lowercases and splits on what is not a letter or digit, one term per
// CJK character (a standard analyzer).
type analyzer struct {
	plain bool
	// words: a run of Chinese characters also yields its dictionary words
	// of three or four characters (segment), whole, beside its pairs.
	words bool
	// stems, when set, remembers the stems of words (an index build,
	// which meets the same words thousands of times; not shared between
	// goroutines).
	stems map[string]string
	// w are the weights of a request's terms; nil: DefaultWeights'.
	w *Weights
}

// term kinds: a CJK single character weighs less in a query than a pair.
const (
	kindWord = iota
	kindCJKChar
	kindCJKPair
)

// each calls emit for every term of s, in order. Words of one meaning
// ("repository", "repos", "repo") become one term, and a phrase of one
// meaning ("pull request") adds that term (canonical).
func (a analyzer) each(s string, emit func(term string, kind int)) {
	prev := ""
	scan(s, func(w string) {
		if a.plain {
			emit(strings.ToLower(w), kindWord)
			return
		}
		for _, part := range splitCamel(w) {
			part = strings.ToLower(part)
			if c, ok := canonicalPhrases[prev+" "+part]; ok {
				emit(c, kindWord)
			}
			prev = part
			if t := a.normalize(part); t != "" {
				emit(canonical(t), kindWord)
			}
		}
	}, func(run string) {
		prev = ""
		a.cjk(run, emit)
	})
}

// scan cuts s into words (runs of letters and digits) and runs of CJK
// characters.
func scan(s string, word, cjk func(string)) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		inCJK := isCJK(r)
		j := i + size
		for j < len(s) {
			r2, n := utf8.DecodeRuneInString(s[j:])
			if !isWordRune(r2) || isCJK(r2) != inCJK {
				break
			}
			j += n
		}
		if inCJK {
			cjk(s[i:j])
		} else {
			word(s[i:j])
		}
		i = j
	}
}

// normalizeWord drops stop words, numbers and single letters of a
// lowercased word, and stems it; "" when nothing is left.
func normalizeWord(w string) string { return analyzer{}.normalize(w) }

func (a analyzer) normalize(w string) string {
	if len(w) < 2 || stopWords[w] || isNumber(w) {
		return ""
	}
	if a.stems == nil {
		return stem(w)
	}
	s, ok := a.stems[w]
	if !ok {
		s = stem(w)
		a.stems[w] = s
	}
	return s
}

// stem is Porter2's stem of w, except that an agent noun in -ee is its
// verb's ("assignees" → assign, "invitee" → invit), which Porter2 leaves
// apart.
func stem(w string) string {
	if base, ok := strings.CutSuffix(strings.TrimSuffix(w, "s"), "ee"); ok && len(base) >= 4 {
		w = base
	}
	env := snowballstem.NewEnv(w)
	english.Stem(env)
	return env.Current()
}

func (a analyzer) cjk(run string, emit func(string, int)) {
	var prev string
	for _, r := range run {
		c := string(r)
		if a.plain || !cjkStopChars[r] {
			emit(c, kindCJKChar)
		}
		if !a.plain && prev != "" {
			emit(canonical(prev+c), kindCJKPair)
		}
		prev = c
	}
	if a.words {
		segment(run, func(w string) {
			if utf8.RuneCountInString(w) > 2 {
				emit(w, kindCJKPair)
			}
		})
	}
}

// splitCamel cuts an identifier part at case changes: "userIds" → user,
// Ids; "HTTPServer" → HTTP, Server; "v2" stays whole. An acronym's plural
// is the acronym: "PRs" → PR, "URLsFor" → URL, For.
func splitCamel(w string) []string {
	rs := []rune(w)
	var parts []string
	start := 0
	for i := 1; i < len(rs); i++ {
		if pluralAcronym(rs, start, i) {
			parts = append(parts, string(rs[start:i]))
			start = i + 1
			continue
		}
		lowerToUpper := unicode.IsLower(rs[i-1]) && unicode.IsUpper(rs[i])
		acronymEnd := unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		// "PRs": no cut before the R, the s is a plural.
		if i > start && (lowerToUpper || acronymEnd) && !pluralAcronym(rs, start, i+1) {
			parts = append(parts, string(rs[start:i]))
			start = i
		}
	}
	if start < len(rs) {
		parts = append(parts, string(rs[start:]))
	}
	return parts
}

// pluralAcronym: rs[start:i] is capitals and rs[i] the "s" of their plural.
func pluralAcronym(rs []rune, start, i int) bool {
	return i < len(rs) && i-start >= 2 && rs[i] == 's' && allUpper(rs[start:i]) && (i+1 == len(rs) || unicode.IsUpper(rs[i+1]))
}

func allUpper(rs []rune) bool {
	for _, r := range rs {
		if !unicode.IsUpper(r) {
			return false
		}
	}
	return true
}

func isCJK(r rune) bool {
	// ー (the long vowel mark of katakana) and 々 (the kanji repeat mark)
	// belong to no script of their own.
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r == 'ー' || r == '々'
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isNumber(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// stopWords are English function words, plus the words of a request that
// name no operation ("please", "can you").
var stopWords = setOf(`a an and are as at be been but by can could do does did for from has have
had he her his how if in into is it its itself of on or our ours please should so such than that
the their them then there these they this those to too us was we were what when where which who
whom why will with would you your yours i me my mine myself am any some just also about all
via each other only own same very s t don doesn isn wasn`)

// cjkStopChars are Chinese particles and pronouns that carry no meaning
// alone; they still form pairs with their neighbours.
var cjkStopChars = func() map[rune]bool {
	m := map[rune]bool{}
	for _, r := range "的了是把我你他她它这那个吗呢吧啊和与在给帮请么一些" {
		m[r] = true
	}
	return m
}()

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}
