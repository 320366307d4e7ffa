package jsonlimit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestMeasure(t *testing.T) {
	for _, tc := range []struct {
		in              string
		depth, elements int
	}{
		{``, 0, 0},
		{`  `, 0, 0},
		{`1`, 0, 1},
		{`"a"`, 0, 1},
		{`{}`, 1, 1},
		{`[]`, 1, 1},
		{`[ ]`, 1, 1},
		{`[1]`, 1, 2},
		{`[1,2,3]`, 1, 4},
		{`{"a":1,"b":[true,null]}`, 2, 5},
		{`{"a":{}}`, 2, 2},
		{`{"a":{"b":{"c":[]}}}`, 4, 4},
		{`["[{,", "\"]", {"k\\": ","}]`, 2, 5},
		{`[[[[]]]]`, 4, 4},
	} {
		got := Measure([]byte(tc.in))
		if got.Depth != tc.depth || got.Elements != tc.elements {
			t.Errorf("Measure(%s) = %+v, want depth %d, elements %d", tc.in, got, tc.depth, tc.elements)
		}
	}
}

// TestElementsMatchDecoded counts the values of decoded documents the
// other way, walking them.
func TestElementsMatchDecoded(t *testing.T) {
	for _, doc := range []string{
		`{"a":[1,2,{"b":"x,y]"}],"c":{"d":[],"e":{}}}`,
		`[[],[[]],{"a":[1]},"\\\""]`,
		`{"users":[{"id":1,"tags":["a","b"]},{"id":2,"tags":[]}]}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		if got, want := Measure([]byte(doc)).Elements, count(v); got != want {
			t.Errorf("%s: %d elements, decoded %d", doc, got, want)
		}
	}
}

func count(v any) int {
	n := 1
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			n += count(x)
		}
	case map[string]any:
		for _, x := range t {
			n += count(x)
		}
	}
	return n
}

func TestCheck(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	for _, tc := range []struct {
		name  string
		in    string
		l     Limits
		limit string
	}{
		{"deep", deep, Limits{Depth: 64}, LimitDepth},
		{"at depth", strings.Repeat("[", 64) + strings.Repeat("]", 64), Limits{Depth: 64}, ""},
		{"past depth", strings.Repeat("{\"a\":", 65) + "1" + strings.Repeat("}", 65), Limits{Depth: 64}, LimitDepth},
		{"many", "[" + strings.Repeat("1,", 99999) + "1]", Limits{Elements: 100000}, LimitElements},
		{"at elements", "[" + strings.Repeat("1,", 99998) + "1]", Limits{Elements: 100000}, ""},
		{"unterminated string", `["abc`, Limits{Depth: 1, Elements: 2}, ""},
		{"brackets in strings", `["` + strings.Repeat("[", 1000) + `"]`, Limits{Depth: 1}, ""},
	} {
		err := Check([]byte(tc.in), tc.l)
		var le *Error
		switch {
		case tc.limit == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.limit != "" && (!errors.As(err, &le) || le.Limit != tc.limit):
			t.Errorf("%s: got %v, want the %s limit", tc.name, err, tc.limit)
		}
	}
}

// TestCheckAllocatesNothing: the scan is what runs before any decoding.
func TestCheckAllocatesNothing(t *testing.T) {
	doc := []byte(`{"a":[1,2,{"b":"x"}],"c":` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + `}`)
	if n := testing.AllocsPerRun(100, func() { Check(doc, Limits{Depth: 64, Elements: 1000}) }); n != 0 {
		t.Errorf("Check allocates %v times", n)
	}
}

// countTokens counts the values of doc from encoding/json's token stream
// (duplicate keys included, which decoding merges); ok is false for
// invalid JSON.
func countTokens(doc string) (n int, ok bool) {
	if !json.Valid([]byte(doc)) {
		return 0, false
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	type open struct{ object, expectKey bool }
	var stack []open
	for {
		tok, err := dec.Token()
		if err != nil {
			return n, true
		}
		if d, isDelim := tok.(json.Delim); isDelim && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if k := len(stack) - 1; k >= 0 && stack[k].object {
			stack[k].expectKey = !stack[k].expectKey
			if !stack[k].expectKey { // that token was a key
				continue
			}
		}
		n++
		if d, isDelim := tok.(json.Delim); isDelim {
			stack = append(stack, open{object: d == '{', expectKey: true})
		}
	}
}

func FuzzMeasure(f *testing.F) {
	f.Add(`{"a":[1,2,{"b":"x,y]"}],"c":{"d":[],"e":{}}}`)
	f.Add(`[[],"\\"]`)
	f.Fuzz(func(t *testing.T, doc string) {
		want, ok := countTokens(doc)
		if !ok {
			Measure([]byte(doc)) // must not panic
			return
		}
		if got := Measure([]byte(doc)).Elements; got != want {
			t.Errorf("%q: %d elements, decoded %d", doc, got, want)
		}
	})
}
