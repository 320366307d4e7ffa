package loop

import (
	"net/http"
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
