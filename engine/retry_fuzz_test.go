package engine

import (
	"math"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzRetryAfter: whatever Retry-After an upstream sends, the wait read is
// never negative, and one asking for n seconds is read as at least n
// seconds (or the longest wait a Duration holds): a wait beyond the call's
// deadline gives up (TestRetries), so a long wait misread as a short one
// retries at once what the upstream asked to be left alone for.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{
		"", "3", " 120 ", "+7", "-5", "0", "9223372036", "9223372037",
		"99999999999999999999", "Wed, 21 Oct 2015 07:28:00 GMT", "soon",
		time.Now().Add(time.Hour).UTC().Format(http.TimeFormat),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d := retryAfter(v)
		if d < 0 {
			t.Fatalf("retryAfter(%q) = %v: negative", v, d)
		}
		n, ok := new(big.Int).SetString(strings.TrimSpace(v), 10)
		if !ok || n.Sign() <= 0 {
			return
		}
		want := time.Duration(math.MaxInt64)
		if n.Cmp(big.NewInt(math.MaxInt64/int64(time.Second))) <= 0 {
			want = time.Duration(n.Int64()) * time.Second
		}
		if d < want {
			t.Fatalf("Retry-After: %q asks for %s seconds; read as %v", v, n, d)
		}
	})
}
