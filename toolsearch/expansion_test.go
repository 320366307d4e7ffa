package toolsearch

import (
	"slices"
	"strings"
	"testing"
)

func TestParseRequests(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, tc := range []struct {
		name, answer string
		want         []string
	}{
		{"array", `["cancel the bill", "void invoice 42"]`, []string{"cancel the bill", "void invoice 42"}},
		{"fenced", "```json\n[\"作废发票\", \"cancel the bill\"]\n```", []string{"作废发票", "cancel the bill"}},
		{"lines", "1. cancel the bill\n- void invoice 42\n\n", []string{"cancel the bill", "void invoice 42"}},
		{"at most five", `["a","b","c","d","e","f","g"]`, []string{"a", "b", "c", "d", "e"}},
		{"cut", `["` + long + `"]`, []string{long[:expandRequestLen]}},
		{"control characters", "[\"cancel\\u0007 the bill\"]", []string{"cancel  the bill"}},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseRequests(tc.answer); !slices.Equal(got, tc.want) {
				t.Fatalf("parseRequests(%q) = %q, want %q", tc.answer, got, tc.want)
			}
		})
	}
}
