package connections

import (
	"regexp"
	"slices"
	"testing"
	"unicode"
)

// TestFlowWords: every sentence of the flow's pages is in both languages,
// the Chinese one Chinese, with the same {names}.
func TestFlowWords(t *testing.T) {
	names := regexp.MustCompile(`\{[a-z_]+\}|%d`)
	for key, w := range flowWords {
		if w[0] == "" || w[1] == "" || !slices.ContainsFunc([]rune(w[1]), func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
			t.Errorf("%s: %q", key, w)
		}
		en, zh := names.FindAllString(w[0], -1), names.FindAllString(w[1], -1)
		slices.Sort(en)
		slices.Sort(zh)
		if !slices.Equal(en, zh) {
			t.Errorf("%s: names %v in English, %v in Chinese", key, en, zh)
		}
	}
}
