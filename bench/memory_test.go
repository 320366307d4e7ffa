package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGCsFrom reads collections and their CPU from a gctrace log as Go
// 1.26 writes it, from an offset on (the lines before it are the start's).
func TestGCsFrom(t *testing.T) {
	before := "gc 1 @0.011s 3%: 0.020+1.0+0.010 ms clock, 0.041+0.30/0.50/0.20+0.021 ms cpu, 3->3->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P\n"
	during := "gc 2 @0.300s 2%: 0.018+1.2+0.003 ms clock, 0.037+0.5/0.9/0.1+0.007 ms cpu, 4->4->2 MB, 4 MB goal, 0 MB stacks, 1 MB globals, 2 P\n" +
		"some other line a server logs\n" +
		"gc 3 @0.600s 2%: 0.010+0.80+0.002 ms clock, 0.020+0.25/0.40/0+0.004 ms cpu, 4->5->2 MB, 5 MB goal, 0 MB stacks, 1 MB globals, 2 P (forced)\n"
	log := filepath.Join(t.TempDir(), "gc.log")
	if err := os.WriteFile(log, []byte(before+during), 0o600); err != nil {
		t.Fatal(err)
	}
	n, cpu, idle := gcsFrom(log, int64(len(before)))
	// 0.037+0.5+0.9+0.007 and 0.020+0.25+0.40+0.004 ms; idle 0.1 and 0
	near := func(d time.Duration, us float64) bool {
		want := time.Duration(us * float64(time.Microsecond))
		return d > want-time.Microsecond && d < want+time.Microsecond
	}
	if n != 2 || !near(cpu, 2118) || !near(idle, 100) {
		t.Errorf("gcsFrom = %d cycles, %v, idle %v; want 2, 2.118ms, idle 100µs", n, cpu, idle)
	}
	if n, _, _ := gcsFrom(log, 0); n != 3 {
		t.Errorf("from the start: %d cycles, want 3", n)
	}
	if n, cpu, idle := gcsFrom(log, 1<<20); n != 0 || cpu != 0 || idle != 0 {
		t.Errorf("past the end: %d, %v, %v", n, cpu, idle)
	}
}
