package main

import (
	"math"
	"runtime/metrics"
	"time"
)

// tailSample is what this process's runtime says about a phase's tail
// (issue 38's point 3): garbage collections and their stop-the-world
// pauses, the GC's share of the CPU, and how long goroutines waited,
// runnable, for a thread (the Go scheduler's latency).
type tailSample []metrics.Sample

var tailMetrics = []string{
	"/gc/cycles/total:gc-cycles",
	"/sched/pauses/total/gc:seconds",
	"/sched/latencies:seconds",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
}

func readTail() tailSample {
	s := make(tailSample, len(tailMetrics))
	for i, name := range tailMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	return s
}

// tail is a phase's figures: GC cycles, the sum of their pauses, the GC's
// share of the process's CPU, and the scheduler latency's p99 and maximum.
type tail struct {
	gcCycles           uint64
	gcPauses           time.Duration
	gcCPU, totalCPU    float64
	schedP99, schedMax time.Duration
	schedCounts        []uint64 // the latency histogram's counts, added up over phases
	schedBuckets       []float64
}

// add adds the phase between before and after.
func (t *tail) add(before, after tailSample) {
	t.gcCycles += after[0].Value.Uint64() - before[0].Value.Uint64()
	pb, pa := before[1].Value.Float64Histogram(), after[1].Value.Float64Histogram()
	for i := range pa.Counts {
		if n := pa.Counts[i] - pb.Counts[i]; n > 0 {
			t.gcPauses += time.Duration(float64(n) * mid(pa.Buckets[i], pa.Buckets[i+1]) * 1e9)
		}
	}
	sb, sa := before[2].Value.Float64Histogram(), after[2].Value.Float64Histogram()
	if t.schedCounts == nil {
		t.schedCounts, t.schedBuckets = make([]uint64, len(sa.Counts)), sa.Buckets
	}
	for i := range sa.Counts {
		t.schedCounts[i] += sa.Counts[i] - sb.Counts[i]
	}
	t.gcCPU += after[3].Value.Float64() - before[3].Value.Float64()
	t.totalCPU += after[4].Value.Float64() - before[4].Value.Float64()
}

// finish computes the scheduler latency's p99 and maximum from the
// histogram (each a bucket's upper bound).
func (t *tail) finish() {
	var n uint64
	for _, c := range t.schedCounts {
		n += c
	}
	var seen uint64
	for i, c := range t.schedCounts {
		if c == 0 {
			continue
		}
		seen += c
		upper := time.Duration(min(t.schedBuckets[i+1], 3600) * 1e9)
		if t.schedP99 == 0 && float64(seen) >= 0.99*float64(n) {
			t.schedP99 = upper
		}
		t.schedMax = upper
	}
}

// mid is a histogram bucket's middle (its lower bound when open above).
func mid(lo, hi float64) float64 {
	if math.IsInf(hi, 1) {
		return lo
	}
	if math.IsInf(lo, -1) {
		return hi
	}
	return (lo + hi) / 2
}
