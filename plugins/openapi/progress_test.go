package openapi

import (
	"testing"
	"time"
)

// TestReporterThrottles: a phase reports its start and its end, and in
// between at most one step per progressEvery; a nil func reports nothing.
func TestReporterThrottles(t *testing.T) {
	var got []Progress
	r := Reporter{F: func(p Progress) { got = append(got, p) }}
	start := time.Now()
	r.Start(PhaseWriting, 100000)
	for i := range 100000 {
		r.Step(i)
	}
	r.Step(100000)
	most := 2 + int(time.Since(start)/progressEvery)
	if len(got) < 2 || len(got) > most || got[0] != (Progress{PhaseWriting, 0, 100000}) || got[len(got)-1] != (Progress{PhaseWriting, 100000, 100000}) {
		t.Fatalf("%d reports (at most %d): first %+v, last %+v", len(got), most, got[0], got[len(got)-1])
	}
	var none Reporter
	none.Start(PhaseWriting, 1)
	none.Step(1)
}
