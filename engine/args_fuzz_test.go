package engine

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// kindWords is every answer jsonKind may give: kinds, never the value.
var kindWords = regexp.MustCompile(`^(a string holding )*(nothing|a JSON object|an array|a string that is not valid JSON|a boolean|null|a number|text that is not JSON)$`)

// FuzzArgumentsError: arguments a caller or a model sends that are
// refused (not an object, a string holding something else, JSON broken
// or past the limits) are refused naming what was sent, never quoting it
// (review77: arguments may hold a secret). A secret planted anywhere in
// them is never in the error, and jsonKind answers in its own words only,
// however deeply a string holds a string.
func FuzzArgumentsError(f *testing.F) {
	for _, s := range [][2]string{
		{`"`, `"`}, {`"\"`, `\""`}, {`[`, `]`}, {`{"a":"`, `"}`}, {`{"a":`, `}`}, {`{"`, `":1}`},
		{`"{\"a\":\"`, `\"}"`}, {`{"a":"`, `\u0000"`}, {`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["`, `"]}`},
		{`tru`, ``}, {`-`, `e`}, {`{"a":"`, "\xff\"}"},
	} {
		f.Add(s[0], s[1])
	}
	const secret = "Zq9sK7wXr2"
	f.Fuzz(func(t *testing.T, before, after string) {
		if strings.Contains(before+after, secret[:4]) {
			return
		}
		raw := before + secret + after
		for _, in := range []string{raw, quoted(raw)} {
			_, err := decodeArguments(json.RawMessage(in))
			if err != nil && strings.Contains(err.Error(), secret[1:]) {
				t.Fatalf("%q: the error quotes the arguments: %v", in, err)
			}
			if k := jsonKind([]byte(in)); !kindWords.MatchString(k) {
				t.Fatalf("%q: jsonKind says %q", in, k)
			}
		}
	})
}

func quoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
