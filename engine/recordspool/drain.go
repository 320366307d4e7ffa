package recordspool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/blindexec/blindexec/engine"
)

// readChunk is what the drainer reads of a segment at a time: more than
// the largest frame, so a chunk always holds a whole one.
const readChunk = 2*maxFrame + frameHead

// drain writes the spooled records to the database, oldest first, until
// Close: with the spool empty it waits for an append; with the database
// failing it retries the same batch with a growing backoff. The log says
// once that the database is down and once that it is back.
func (s *Spool) drain() {
	defer close(s.drainerDone)
	var r reader
	defer r.close()
	var out outage
	var w window
	defer w.reset()
	for {
		s.mu.Lock()
		s.dropDrained(&r)
		empty := len(s.segs) == 0 || s.drainOff == s.segs[0].size
		if empty || s.gathering(&w) {
			closed := s.closed
			s.mu.Unlock()
			if empty && closed {
				return
			}
			var due <-chan time.Time
			if w.t != nil {
				due = w.t.C
			}
			select {
			case <-s.wake:
			case <-due:
				w.spent = true
			case <-s.drainCtx.Done():
				return
			}
			continue
		}
		w.reset()
		seg, off := s.segs[0], s.drainOff
		recs, used, frames := s.takeRecent(seg, off)
		s.mu.Unlock()

		var err error
		if recs == nil {
			recs, used, frames, err = r.next(s.dir, seg, off, s.opts.BatchSize)
		}
		var dmg *damagedError
		switch {
		case errors.As(err, &dmg):
			// Damaged since recovery checked it (a disk fault): the
			// damaged frames are lost, the drain resumes at the next
			// intact one.
			name := segName(seg.seq)
			os.Remove(filepath.Join(s.dir, name+damagedSuffix))
			os.Link(filepath.Join(s.dir, name), filepath.Join(s.dir, name+damagedSuffix))
			s.log.Error("record spool: a damaged part of a segment was skipped; its records are lost, the records around it are kept",
				"file", name, "offset", dmg.off, "bytes", dmg.size, "records_lost", dmg.records, "ids_lost", dmg.ids,
				"kept_aside", name+damagedSuffix)
			used, frames = dmg.size, dmg.records
		case err != nil:
			// The segment cannot be read (a disk fault): its records are
			// lost; say how many bytes, and go on with the next one.
			s.log.Error("record spool: a segment could not be read; its remaining records are lost",
				"file", segName(seg.seq), "bytes", seg.size-off, "err", err)
			used, frames = seg.size-off, 0
		}
		if len(recs) > 0 && !s.deliver(recs, &out) {
			return // closed while the database was failing
		}
		s.mu.Lock()
		if dmg != nil {
			s.stats.Lost += dmg.records
		}
		s.drainOff += used
		s.pending(-used, -frames)
		s.stats.Drained += int64(len(recs))
		s.mu.Unlock()
	}
}

// window is the drainer's wait for a batch to gather.
type window struct {
	t     *time.Timer // started when the window opened
	spent bool        // t fired: write what gathered
}

func (w *window) reset() {
	if w.t != nil {
		w.t.Stop()
	}
	*w = window{}
}

// gathering reports whether the drainer should wait for more records
// before writing: fewer than a batch are pending, the window (Gather
// long, opened here) has not passed, and the spool is open. Called with
// mu held.
func (s *Spool) gathering(w *window) bool {
	if s.opts.Gather < 0 || s.closed || w.spent || s.stats.PendingRecords >= int64(s.opts.BatchSize) {
		return false
	}
	if w.t == nil {
		w.t = time.NewTimer(s.opts.Gather)
	}
	return true
}

// takeRecent returns the records held in memory from off in seg on, as
// far as they are synced and up to BatchSize (at least one append's):
// the records, the bytes and frames they took; nil when memory holds no
// append starting at off. Appends the drainer is past are dropped. Called
// with mu held.
func (s *Spool) takeRecent(seg segment, off int64) (recs []engine.Record, used, frames int64) {
	for len(s.recent) > 0 && (s.recent[0].seq < seg.seq || s.recent[0].seq == seg.seq && s.recent[0].off < off) {
		s.dropRecent()
	}
	for len(s.recent) > 0 {
		b := s.recent[0]
		if b.seq != seg.seq || b.off != off+used || b.off+b.size > seg.size ||
			recs != nil && len(recs)+len(b.recs) > s.opts.BatchSize {
			break
		}
		if recs == nil {
			recs = b.recs
		} else {
			recs = append(recs[:len(recs):len(recs)], b.recs...) // never into the Recorder's array
		}
		used += b.size
		s.dropRecent()
	}
	return recs, used, int64(len(recs))
}

func (s *Spool) dropRecent() {
	s.recentBytes -= s.recent[0].size
	s.recent[0] = recentBatch{}
	s.recent = s.recent[1:]
}

// outage is the drainer's memory of a database outage, for its two log lines.
type outage struct {
	since    time.Time
	failed   int   // writes that failed
	appended int64 // Stats.Appended when it began
	backoff  time.Duration
}

// deliver writes recs until the database takes them; false when the spool
// closed first.
func (s *Spool) deliver(recs []engine.Record, out *outage) bool {
	for {
		ctx, cancel := context.WithTimeout(s.drainCtx, s.opts.WriteTimeout)
		err := s.sink.WriteRecords(ctx, recs)
		cancel()
		if err == nil {
			break
		}
		if s.drainCtx.Err() != nil {
			return false
		}
		s.mu.Lock()
		if !s.stats.DatabaseDown {
			s.stats.DatabaseDown = true
			*out = outage{since: time.Now(), appended: s.stats.Appended, backoff: s.opts.MinBackoff}
			s.log.Warn("execution records: the database is not taking them; keeping them in the spool and retrying",
				"pending", s.stats.PendingRecords, "err", err)
		}
		s.mu.Unlock()
		out.failed++
		// Full jitter, so that replicas behind one database do not retry
		// in step.
		wait := out.backoff/2 + rand.N(out.backoff/2+1)
		out.backoff = min(out.backoff*2, s.opts.MaxBackoff)
		select {
		case <-time.After(wait):
		case <-s.drainCtx.Done():
			return false
		}
	}
	s.mu.Lock()
	if s.stats.DatabaseDown {
		s.stats.DatabaseDown = false
		s.log.Info("execution records: the database is taking them again",
			"down_for", time.Since(out.since).Round(time.Millisecond).String(), "failed_writes", out.failed,
			"spooled_meanwhile", s.stats.Appended-out.appended, "pending", s.stats.PendingRecords)
	}
	s.mu.Unlock()
	return true
}

// dropDrained deletes the segments the database has taken whole (synced
// and drained to their last byte), except the one appends go to. Called
// with mu held.
func (s *Spool) dropDrained(r *reader) {
	for len(s.segs) > 0 && s.drainOff == s.segs[0].written && !(s.active != nil && len(s.segs) == 1) {
		seq := s.segs[0].seq
		if r.f != nil && r.seq == seq {
			r.close()
		}
		if err := os.Remove(filepath.Join(s.dir, segName(seq))); err != nil {
			s.log.Warn("record spool: a drained segment could not be removed", "file", segName(seq), "err", err)
		}
		s.segs = s.segs[1:]
		s.drainOff = 0
	}
}

// reader reads one segment at a time.
type reader struct {
	f   *os.File
	seq uint64
	buf []byte
}

func (r *reader) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// next decodes up to n records of seg from off on: the records, the
// bytes and frames they took. Every frame inside the synced size was
// checked (by recovery or as it was appended), so a bad one is an error.
func (r *reader) next(dir string, seg segment, off int64, n int) (recs []engine.Record, used, frames int64, err error) {
	if r.f == nil || r.seq != seg.seq {
		r.close()
		if r.f, err = os.Open(filepath.Join(dir, segName(seg.seq))); err != nil {
			return nil, 0, 0, err
		}
		r.seq = seg.seq
	}
	size := min(seg.size-off, readChunk)
	if int64(cap(r.buf)) < size {
		r.buf = make([]byte, size)
	}
	b := r.buf[:size]
	if _, err := r.f.ReadAt(b, off); err != nil && err != io.EOF {
		return nil, 0, 0, err
	}
	for len(recs) < n {
		payload, fn, ok := parseFrame(b[used:])
		if !ok {
			break
		}
		used += int64(fn)
		frames++
		var rec engine.Record
		if json.Unmarshal(payload, &rec) != nil {
			continue // cannot happen short of a bug: the CRC matched
		}
		recs = append(recs, rec)
	}
	if frames == 0 {
		return nil, 0, 0, r.damage(seg, off)
	}
	return recs, used, frames, nil
}

// damagedError is a run of damaged bytes the drainer met.
type damagedError struct{ damage }

func (e *damagedError) Error() string {
	return fmt.Sprintf("%d damaged bytes at offset %d", e.size, e.off)
}

// damage reads the rest of seg from off, where a frame is not intact, up
// to the next intact frame: that run, as a *damagedError.
func (r *reader) damage(seg segment, off int64) error {
	rest := make([]byte, seg.size-off)
	if _, err := r.f.ReadAt(rest, off); err != nil && err != io.EOF {
		return err
	}
	d := describeDamage(rest, 0, resync(rest, 0), false)
	d.off = off
	return &damagedError{d}
}
