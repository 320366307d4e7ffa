// Package loglimit bounds the log lines that outside input can cause:
// at most N a period, the next one saying how many were held back.
package loglimit

import (
	"sync"
	"time"
)

// Limiter lets through at most N log lines per Period, and counts the
// ones it holds back for the next line to report. The zero value lets
// none through; its fields are set once, before use.
type Limiter struct {
	N      int
	Period time.Duration

	mu         sync.Mutex
	start      time.Time
	used       int
	suppressed int
}

// Allow reports whether a line may be logged now and, when it may, how
// many were held back since the last one.
func (l *Limiter) Allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= l.Period {
		l.start, l.used = now, 0
	}
	if l.used >= l.N {
		l.suppressed++
		return false, 0
	}
	l.used++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}
