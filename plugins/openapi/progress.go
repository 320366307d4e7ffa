package openapi

import "time"

// Progress is how far an import has come: Done of Total in Phase.
type Progress struct {
	Phase string `json:"phase"`
	Done  int    `json:"done"`
	Total int    `json:"total"`
}

// Phases of an import, in order. The first two are the caller's (Sync
// starts from a loaded document); Done and Total are then the document's
// size in bytes.
const (
	PhaseFetched    = "fetched"    // the document's bytes are read
	PhaseParsed     = "parsed"     // the document is loaded
	PhaseConverting = "converting" // operations of the document converted
	PhaseWriting    = "writing"    // plugins written (compared, in a dry run)
)

// progressEvery is the least time between two reports of a phase, so
// that reporting costs nothing next to the work.
const progressEvery = 100 * time.Millisecond

// Reporter calls F (Options.Progress): at a phase's start and end, and at
// most every progressEvery in between. A nil F costs a nil check. The
// converter reports its phase with one; an importer writing the result
// reports PhaseWriting with another.
type Reporter struct {
	F     func(Progress)
	phase string
	total int
	last  time.Time
}

// Start reports the start of phase, of total steps.
func (r *Reporter) Start(phase string, total int) {
	if r.F == nil {
		return
	}
	r.phase, r.total, r.last = phase, total, time.Now()
	r.F(Progress{Phase: phase, Total: total})
}

// Step reports done of the phase's total, unless it reported less than
// progressEvery ago and the phase is not over.
func (r *Reporter) Step(done int) {
	if r.F == nil {
		return
	}
	if done < r.total {
		now := time.Now()
		if now.Sub(r.last) < progressEvery {
			return
		}
		r.last = now
	}
	r.F(Progress{Phase: r.phase, Done: done, Total: r.total})
}
