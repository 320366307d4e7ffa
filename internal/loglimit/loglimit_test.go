package loglimit

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	l := &Limiter{N: 2, Period: time.Minute}
	t0 := time.Unix(1_000_000, 0)
	steps := []struct {
		at         time.Duration
		ok         bool
		suppressed int
	}{
		{0, true, 0},
		{time.Second, true, 0},
		{2 * time.Second, false, 0},
		{3 * time.Second, false, 0},
		{time.Minute, true, 2}, // a new period: says what was held back
		{time.Minute + time.Second, true, 0},
		{time.Minute + 2*time.Second, false, 0},
	}
	for i, s := range steps {
		ok, suppressed := l.Allow(t0.Add(s.at))
		if ok != s.ok || suppressed != s.suppressed {
			t.Errorf("step %d: %v %d, want %v %d", i, ok, suppressed, s.ok, s.suppressed)
		}
	}
}
