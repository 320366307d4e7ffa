package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encode is encoding/json's text of s, with HTML escaping on or off.
func encode(t testing.TB, s string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// check: a string said to be plain is written by encoding/json as it is,
// and AppendString writes any string as encoding/json does.
func check(t testing.TB, s string) {
	if got, want := string(AppendString([]byte("x"), s)), "x"+encode(t, s, false); got != want {
		t.Errorf("AppendString(%q) = %s, encoding/json writes %s", s, got, want)
	}
	for _, html := range []bool{false, true} {
		if plain(s, html) && encode(t, s, html) != `"`+s+`"` {
			t.Errorf("plain(%q, html=%v), but encoding/json writes %s", s, html, encode(t, s, html))
		}
	}
}

func TestPlain(t *testing.T) {
	tests := []struct {
		s           string
		plain, html bool
	}{
		{"", true, true},
		{"019abcde-0123-7def-8000-0123456789ab", true, true},
		{"search_company_basic", true, true},
		{"a<b", true, false},
		{"a&b", true, false},
		{`a"b`, false, false},
		{`a\b`, false, false},
		{"a\nb", false, false},
		{"\x7f", false, false},
		{"é", false, false},
		{"\u2028", false, false},
		{"\xff", false, false},
		{"a\x00\tb\u2029\xc3", false, false},
	}
	for _, tt := range tests {
		if got := Plain(tt.s); got != tt.plain {
			t.Errorf("Plain(%q) = %v, want %v", tt.s, got, tt.plain)
		}
		if got := PlainHTML(tt.s); got != tt.html {
			t.Errorf("PlainHTML(%q) = %v, want %v", tt.s, got, tt.html)
		}
		check(t, tt.s)
	}
}

func FuzzPlain(f *testing.F) {
	for _, s := range []string{"", "abc", "a<b>&c", `"\`, "é\u2028", "\xff\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}
