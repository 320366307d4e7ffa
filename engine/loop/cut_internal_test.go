package loop

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzEncodedLen: the length cutTexts reckons with is what encoding/json
// writes, for every valid UTF-8 text.
func FuzzEncodedLen(f *testing.F) {
	for _, s := range []string{"", "abc", "\"\\\n\r\t\x01<>&", "é\u2028\u2029x", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		b, _ := json.Marshal(s)
		if got := encodedLen(s); got != len(b)-2 {
			t.Errorf("encodedLen(%q) = %d, json.Marshal writes %d", s, got, len(b)-2)
		}
		for n := range len(b) {
			end := prefixWithin(s, n)
			p, _ := json.Marshal(s[:end])
			if len(p)-2 > n || !utf8.ValidString(s[:end]) {
				t.Errorf("prefixWithin(%q, %d) = %d: encodes in %d", s, n, end, len(p)-2)
			}
		}
	})
}
