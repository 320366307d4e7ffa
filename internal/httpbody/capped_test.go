package httpbody

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestCapped: a body within the cap reads whole, one of exactly the cap
// ends with io.EOF, a longer one fails with the caller's error at the cap.
func TestCapped(t *testing.T) {
	over := errors.New("over")
	for _, tc := range []struct {
		body string
		max  int64
		want string
		err  error
	}{
		{"", 4, "", nil},
		{"abc", 4, "abc", nil},
		{"abcd", 4, "abcd", nil},
		{"abcde", 4, "abcd", over},
		{"abcdefghijklmnop", 0, "", over},
	} {
		b, err := io.ReadAll(Capped(io.NopCloser(strings.NewReader(tc.body)), tc.max, func() error { return over }))
		if string(b) != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%q under %d: %q, %v; want %q, %v", tc.body, tc.max, b, err, tc.want, tc.err)
		}
	}
}
