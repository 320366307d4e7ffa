package loop

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		header http.Header
		want   time.Duration
		ok     bool
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{}, 0, false},
	} {
		got, ok := retryAfter(tc.header, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %v, %v; want %v, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryWait(t *testing.T) {
	if d := retryWait(5, time.Second, retryHint{after: 2 * time.Second, ok: true}); d != 2*time.Second {
		t.Errorf("with a hint: %v", d)
	}
	if d := retryWait(0, time.Second, retryHint{after: time.Hour, ok: true}); d != maxRetryWait {
		t.Errorf("a long hint is capped: %v", d)
	}
	for attempt, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if d := retryWait(attempt, time.Second, retryHint{}); d < want/2 || d > want {
			t.Errorf("attempt %d: %v, want within [%v, %v]", attempt, d, want/2, want)
		}
	}
	if d := retryWait(100, time.Hour, retryHint{}); d > maxRetryWait || d < maxRetryWait/2 {
		t.Errorf("backoff not capped: %v", d)
	}
}

// FuzzRetryAfter: whatever wait a model provider's answer asks for
// (retry-after-ms, Retry-After seconds or date), the wait before the next
// call is within [0, maxRetryWait], and one asking for maxRetryWait or
// more waits maxRetryWait: a long wait misread as a negative one (an
// overflow) retried at once.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range [][2]string{
		{"", "3"}, {"250", "1"}, {"", "Wed, 21 Oct 2015 07:28:00 GMT"}, {"", "soon"},
		{"1e300", ""}, {"+Inf", ""}, {"NaN", "5"}, {"", "9223372037"}, {"", "99999999999999999999"},
	} {
		f.Add(s[0], s[1])
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ms, secs string) {
		h := http.Header{}
		if ms != "" {
			h.Set("Retry-After-Ms", ms)
		}
		if secs != "" {
			h.Set("Retry-After", secs)
		}
		after, ok := retryAfter(h, now)
		if !ok {
			return
		}
		wait := retryWait(0, time.Second, retryHint{after: after, ok: true})
		if wait < 0 || wait > maxRetryWait {
			t.Fatalf("%v: retryAfter = %v, a wait of %v", h, after, wait)
		}
		asked, known := askedSeconds(h.Get("Retry-After-Ms"), h.Get("Retry-After"), now)
		if known && asked >= maxRetryWait.Seconds() && wait != maxRetryWait {
			t.Fatalf("%v asks for %g s: a wait of %v, want %v", h, asked, wait, maxRetryWait)
		}
	})
}

// askedSeconds is the wait a header asks for, in seconds, read without
// Durations (which overflow).
func askedSeconds(ms, secs string, now time.Time) (float64, bool) {
	if f, err := strconv.ParseFloat(ms, 64); err == nil && f >= 0 {
		return f / 1000, true
	}
	if f, err := strconv.ParseFloat(secs, 64); err == nil && strings.Trim(secs, "+0123456789") == "" {
		return f, true
	}
	if at, err := http.ParseTime(secs); err == nil {
		return at.Sub(now).Seconds(), true
	}
	return 0, false
}
