package mcpserver

import (
	"sync"
	"testing"
	"time"
)

// waitIdle waits until c has n goroutines waiting for a request.
func waitIdle(t *testing.T, c *callers, n int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.idle.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines waiting, want %d", c.idle.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCallers: requests run at once however many are in flight (none
// waits for another to end), a goroutine that ended a request takes the
// next, at most maxIdleCallers wait, and none is left waiting when the
// connection ends.
func TestCallers(t *testing.T) {
	c := newCallers()
	const inFlight = maxIdleCallers + 8
	release := make(chan struct{})
	var started, ended sync.WaitGroup
	started.Add(inFlight)
	ended.Add(inFlight)
	for range inFlight {
		c.run(func() { started.Done(); <-release; ended.Done() })
	}
	started.Wait() // every one running while none has ended
	close(release)
	ended.Wait()
	waitIdle(t, &c, maxIdleCallers)

	// The next request goes to one of those waiting, not to a new goroutine.
	hold := make(chan struct{})
	running := make(chan struct{})
	c.run(func() { close(running); <-hold })
	<-running
	if got := c.idle.Load(); got != maxIdleCallers-1 {
		t.Fatalf("%d waiting while one runs, want %d: the request did not go to a waiting goroutine", got, maxIdleCallers-1)
	}
	close(hold)
	waitIdle(t, &c, maxIdleCallers)

	close(c.stop)
	waitIdle(t, &c, 0)
}
