package engine

import (
	"fmt"
	"sync"
	"time"
)

// CodeRateLimited is the refusal of a call (or run) over its user's
// concurrency limit; the HTTP API answers it 429 with Retry-After.
const CodeRateLimited = "rate_limited"

// DefaultRetryAfter is what a refusal of the UserLimiter advises.
const DefaultRetryAfter = time.Second

// UserLimiter bounds what one acting user has in flight, so that one user
// cannot occupy every worker and starve the others: tool calls executed
// directly (/v1/execute, /v1/tools/{name}/call, the MCP proxy, /mcp) and
// LLM runs (/v1/runs; the tool calls of a run count against the run, not
// against the calls). The acting user is the per-user token's user, or
// the user_id the service or admin token names (all RuoYi users share
// the service token); calls acting for no user share user 0's limit.
//
// A nil *UserLimiter, or a zero limit, limits nothing.
type UserLimiter struct {
	MaxCalls   int           // concurrent calls per user
	MaxRuns    int           // concurrent runs per user
	RetryAfter time.Duration // advised to a refused caller (DefaultRetryAfter when zero)

	mu          sync.Mutex
	calls, runs map[int64]int
}

// LimitError is a call or run refused by the UserLimiter.
type LimitError struct {
	What       string // "calls" or "runs"
	User       int64
	Max        int
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("user %d already has %d %s in flight, the limit per user; retry after %s", e.User, e.Max, e.What, e.RetryAfter)
}

// AcquireCall takes one of user's call slots; release gives it back.
func (l *UserLimiter) AcquireCall(user int64) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	return l.acquire(&l.calls, l.MaxCalls, "calls", user)
}

// AcquireRun takes one of user's run slots; release gives it back.
func (l *UserLimiter) AcquireRun(user int64) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	return l.acquire(&l.runs, l.MaxRuns, "runs", user)
}

func (l *UserLimiter) acquire(m *map[int64]int, max int, what string, user int64) (func(), error) {
	if max <= 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if (*m)[user] >= max {
		ra := l.RetryAfter
		if ra <= 0 {
			ra = DefaultRetryAfter
		}
		return nil, &LimitError{What: what, User: user, Max: max, RetryAfter: ra}
	}
	if *m == nil {
		*m = make(map[int64]int)
	}
	(*m)[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			// Users without calls in flight leave the map: it holds the
			// busy users only.
			if (*m)[user]--; (*m)[user] <= 0 {
				delete(*m, user)
			}
		})
	}, nil
}

// rateLimited is the refusal of a LimitError.
func rateLimited(le *LimitError) *RefusedError {
	return &RefusedError{ToolError{Code: CodeRateLimited, Message: le.Error(),
		Details: map[string]any{"limit": "concurrent " + le.What + " per user", "max": le.Max, "retry_after_s": le.RetryAfter.Seconds()}}}
}
