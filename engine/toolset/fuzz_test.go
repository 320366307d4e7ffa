package toolset

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blindexec/blindexec/toolsearch"
)

// FuzzParseSearchArgs: search_tools' arguments, as a model writes them,
// are taken within their limits (a query of at most maxQuery characters,
// trimmed and not empty; a limit from 1 to MaxLimit) or refused with
// ErrArguments, never a query over the limit searched.
func FuzzParseSearchArgs(f *testing.F) {
	f.Add([]byte(`{"query":"list open pull requests","limit":5}`), 2000)
	f.Add([]byte(`{"query":"  ","limit":-3}`), 10)
	f.Add([]byte(`{"query":"查询订单状态","limit":1000000}`), 5)
	f.Add([]byte(``), 0)
	f.Add([]byte(`{"query":"a","query":"bbbbbbbbbbbb"}`), 4)
	f.Add([]byte(`{"Query":"x","LIMIT":9.5}`), 3)
	f.Fuzz(func(t *testing.T, raw []byte, maxQuery int) {
		max := maxQuery
		if max <= 0 {
			max = toolsearch.DefaultMaxQueryChars
		}
		a, err := ParseSearchArgs(raw, maxQuery)
		if err != nil {
			if !errors.Is(err, ErrArguments) {
				t.Fatalf("ParseSearchArgs(%q): %v does not wrap ErrArguments", raw, err)
			}
			return
		}
		if a.Query == "" || a.Query != strings.TrimSpace(a.Query) || utf8.RuneCountInString(a.Query) > max || a.Limit < 1 || a.Limit > MaxLimit {
			t.Fatalf("ParseSearchArgs(%q, %d) = %+v", raw, maxQuery, a)
		}
	})
}

// FuzzParseCallArgs: call_tool's arguments are a tool's name and a JSON
// object for it, or refused with ErrArguments: never arguments that are
// not an object handed on to the tool.
func FuzzParseCallArgs(f *testing.F) {
	f.Add([]byte(`{"name":"get_repo","arguments":{"owner":"a"}}`))
	f.Add([]byte(`{"name":"get_repo","arguments":null}`))
	f.Add([]byte(`{"name":"get_repo","arguments":[1]}`))
	f.Add([]byte(`{"name":"get_repo","arguments": "x"}`))
	f.Add([]byte(`{"name":""}`))
	f.Add([]byte(`{"NAME":"x","Arguments":{}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ParseCallArgs(raw)
		if err != nil {
			if !errors.Is(err, ErrArguments) {
				t.Fatalf("ParseCallArgs(%q): %v does not wrap ErrArguments", raw, err)
			}
			return
		}
		var obj map[string]json.RawMessage
		if a.Name == "" || json.Unmarshal(a.Arguments, &obj) != nil || obj == nil {
			t.Fatalf("ParseCallArgs(%q) = %q, %s", raw, a.Name, a.Arguments)
		}
	})
}
