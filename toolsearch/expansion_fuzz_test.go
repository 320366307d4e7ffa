package toolsearch

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParseRequests: a model's answer to the expansion prompt, whatever
// it holds, gives at most expandRequests requests, each neither empty nor
// longer than expandRequestLen characters, with no control character (a
// request is indexed and read back in tool search's answers).
func FuzzParseRequests(f *testing.F) {
	f.Add("```json\n[\"list open pull requests\", \"find my issues\"]\n```")
	f.Add("1. create an invoice\n2) refund a charge\n- \x1b[31mred\n")
	f.Add(`["a", 1]` + "\nplain line")
	f.Add(strings.Repeat("查询订单", 100))
	f.Fuzz(func(t *testing.T, answer string) {
		got := parseRequests(answer)
		if len(got) > expandRequests {
			t.Fatalf("%d requests from %q", len(got), answer)
		}
		for _, r := range got {
			if r == "" || utf8.RuneCountInString(r) > expandRequestLen || strings.ContainsFunc(r, unicode.IsControl) {
				t.Fatalf("request %q from %q", r, answer)
			}
		}
	})
}
