// Package recordspool keeps execution records on local disk until the
// database has them. The Recorder hands it a batch per group-commit window;
// the batch is appended to a segment file at once, even while the previous
// batch's fsync runs, and one fsync then covers every batch appended so far
// (so a kill -9 loses at most the window the Recorder had not handed over,
// and no batch waits for two fsyncs). A background drainer writes the
// synced records to the database in batches,
// backing off while it is unreachable. A record leaves the spool only once
// the database took it, so a database outage, a restart or a crash loses
// nothing the spool had synced: the next Open finds the segments and the
// drainer writes them. The database skips ids it holds already, which
// makes a replay harmless.
//
// The spool is bounded: past MaxBytes of records not yet in the database,
// Admit fails and the executor refuses new calls with 503 rather than make
// calls it could not record. Records of calls already made are always
// appended, so the bound is exceeded at most by the calls in flight.
package recordspool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/engine"
)

// ErrFull is Admit's answer while the spool holds MaxBytes of records the
// database has not taken.
var ErrFull = errors.New("the execution record spool is full (the database has not taken its records)")

// ErrClosed is WriteRecords' answer after Close.
var ErrClosed = errors.New("the execution record spool is closed")

// Options tune a Spool; zero values take the defaults.
type Options struct {
	// MaxBytes of records not yet in the database past which Admit fails
	// (256 MiB: some 800,000 records, 15 minutes of outage at 1,000 calls/s).
	MaxBytes int64
	// SegmentBytes is the size past which the next append starts a new
	// segment file (4 MiB). Drained segments are deleted whole.
	SegmentBytes int64
	BatchSize    int // records per database write (500)
	// Gather is how long the drainer lets synced records wait for a full
	// batch (100 ms; negative: not at all): fewer, fuller database writes
	// (at 7,000 records a second, 3.7 times fewer; BenchmarkRecordPath).
	Gather       time.Duration
	WriteTimeout time.Duration // bound on one database write (10 s)
	MinBackoff   time.Duration // first wait after a failed write (100 ms)
	MaxBackoff   time.Duration // longest wait between tries (5 s)
	Logger       *slog.Logger  // nil: slog.Default()
}

// Stats are a spool's counters.
type Stats struct {
	PendingRecords int64 // synced, not yet in the database
	PendingBytes   int64
	Appended       int64 // records appended since Open
	Drained        int64 // records the database took since Open (replays included)
	Recovered      int64 // records found on disk at Open
	Lost           int64 // records in damaged frames, skipped (at Open or while draining)
	DatabaseDown   bool  // the last write to the database failed
}

// Spool is a directory of segment files. WriteRecords (called by one
// Recorder) appends; one goroutine drains.
type Spool struct {
	dir  string
	sink engine.RecordSink
	opts Options
	log  *slog.Logger
	lock *os.File // flock held on dir/LOCK

	// Lock order: smu, wmu, mu. smu serializes fsyncs and wmu appends;
	// the disk is touched under them alone, so that Admit, Stats and the
	// drainer never wait for a disk, and an append never waits for an
	// fsync.
	smu  sync.Mutex
	wmu  sync.Mutex
	sync func(*os.File) error // (*os.File).Sync; tests stand in for the disk

	mu       sync.Mutex
	segs     []segment // oldest first; the last one takes appends once active is set
	active   *os.File  // append handle of the last segment; nil until the first append
	drainOff int64     // bytes of segs[0] the database has taken
	group    *commit   // the appends the next fsync will cover
	// recent are the latest appends' records, in append order, so that
	// the drainer hands them to the database without reading them back
	// and decoding them (at full load that was 2–3% of a call's CPU);
	// what is not here (a recovered segment, appends past recentMax) it
	// reads from the segment.
	recent      []recentBatch
	recentBytes int64
	stats       Stats
	closed      bool
	full        atomic.Bool // PendingBytes >= MaxBytes, for Admit on every call

	wake        chan struct{}
	stopDrain   context.CancelFunc
	drainCtx    context.Context
	drainerDone chan struct{}
}

type segment struct {
	seq     uint64
	size    int64    // bytes synced: what the drainer may read
	written int64    // bytes appended (size, plus what awaits an fsync)
	frames  int64    // records appended, not yet synced
	f       *os.File // a segment no longer active with bytes to sync: its append handle until then
}

// recentBatch is an append held in memory: its records and the bytes
// they took at off in segment seq.
type recentBatch struct {
	seq       uint64
	off, size int64
	recs      []engine.Record
}

// recentMax bounds the bytes of appends held in memory for the drainer:
// a few seconds of records at full load.
const recentMax = 4 << 20

// commit is one group commit: the appends one fsync covers. done is closed
// once it ran; err is its outcome.
type commit struct {
	done chan struct{}
	err  error
}

func newCommit() *commit { return &commit{done: make(chan struct{})} }

const (
	segPrefix = "seg-"
	segSuffix = ".spool"
	// damagedSuffix marks a segment kept aside for inspection: a copy of
	// one recovery found damaged, as it was on disk.
	damagedSuffix = ".damaged"
	// rotateCaughtUp is the size past which a segment the drainer has
	// fully written is replaced at the next append, so that a crash
	// replays little when the database keeps up (at most about 4,000
	// records, which the database then skips as present). A rotation
	// costs an fsync of the directory; at 64 KiB it came every batch.
	rotateCaughtUp = 1 << 20
)

func segName(seq uint64) string { return fmt.Sprintf("%s%016d%s", segPrefix, seq, segSuffix) }

// Open takes the spool in dir (created if missing), recovers the segments
// an earlier process left (cutting a torn last frame) and starts draining
// them to sink. Only one process may hold a directory.
func Open(dir string, sink engine.RecordSink, opts Options) (*Spool, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 256 << 20
	}
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = 4 << 20
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 500
	}
	if opts.Gather == 0 {
		opts.Gather = 100 * time.Millisecond
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Spool{
		dir: dir, sink: sink, opts: opts, lock: lock,
		log:         cmp.Or(opts.Logger, slog.Default()),
		wake:        make(chan struct{}, 1),
		drainerDone: make(chan struct{}),
		sync:        (*os.File).Sync,
		group:       newCommit(),
	}
	if err := s.recover(); err != nil {
		lock.Close()
		return nil, err
	}
	if s.stats.Recovered > 0 {
		s.log.Info("execution records from an earlier run found in the spool: writing them to the database",
			"records", s.stats.Recovered, "bytes", s.stats.PendingBytes, "dir", dir)
	}
	s.drainCtx, s.stopDrain = context.WithCancel(context.Background())
	go s.drain()
	return s, nil
}

// DirError is a spool directory that cannot be used: not a directory,
// not writable, or held by another process. No retry mends it: it is a
// setting to change.
type DirError struct {
	Dir string
	// Pid is the process holding the directory, when it is held and its
	// holder is known (0 otherwise).
	Pid int
	Err error
}

func (e *DirError) Error() string {
	if e.Pid > 0 {
		return fmt.Sprintf("record spool: %s is in use by another process (pid %d): %v", e.Dir, e.Pid, e.Err)
	}
	return fmt.Sprintf("record spool: %s: %v", e.Dir, e.Err)
}

func (e *DirError) Unwrap() error { return e.Err }

// ErrInUse is the Err of a DirError for a directory another process holds.
var ErrInUse = errors.New("in use by another process")

// lockDir creates dir if missing and takes its lock: an exclusive flock on
// dir/LOCK, which records the holder's pid for the message of the next
// process that tries.
func lockDir(dir string) (*os.File, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, &DirError{Dir: dir, Err: errors.New("not a directory")}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &DirError{Dir: dir, Err: err}
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, &DirError{Dir: dir, Err: err}
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer lock.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &DirError{Dir: dir, Err: err}
		}
		b := make([]byte, 32)
		n, _ := lock.ReadAt(b, 0)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
		return nil, &DirError{Dir: dir, Pid: pid, Err: ErrInUse}
	}
	if err := lock.Truncate(0); err == nil {
		lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return lock, nil
}

// Probe checks that dir can be a spool now: a directory (created if
// missing) that no other process holds. It takes the lock and lets it go,
// so that a start can refuse a spool setting before it waits for the
// database; Open checks again.
func Probe(dir string) error {
	lock, err := lockDir(dir)
	if err != nil {
		return err
	}
	return lock.Close()
}

// recover lists the segments and validates every frame. A segment with
// frames that are not intact loses only those: its intact frames are
// rewritten to a clean segment, and the segment as found is kept aside
// (seg-N.spool.damaged) for inspection, the loss logged record by record.
// A torn last frame of the newest segment, an append a crash cut short
// before its fsync, is only cut. Segments of the first format are
// rewritten in this one.
func (s *Spool) recover() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("record spool: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, segPrefix) || !strings.HasSuffix(name, segSuffix) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, segPrefix), segSuffix), 10, 64)
		if err != nil {
			continue
		}
		s.segs = append(s.segs, segment{seq: seq})
	}
	slices.SortFunc(s.segs, func(a, b segment) int { return cmp.Compare(a.seq, b.seq) })
	kept := s.segs[:0]
	for i, seg := range s.segs {
		size, n, lost, err := s.recoverSegment(segName(seg.seq), i == len(s.segs)-1)
		if err != nil {
			return err
		}
		s.stats.Lost += lost
		if size == 0 {
			continue
		}
		seg.size, seg.written = size, size
		kept = append(kept, seg)
		s.stats.Recovered += n
		s.pending(size, n)
	}
	s.segs = kept
	return nil
}

// recoverSegment validates the segment name and repairs it as recover
// says: its size and records afterwards (0: removed), and the records lost
// to damage.
func (s *Spool) recoverSegment(name string, newest bool) (size, records, lost int64, err error) {
	path := filepath.Join(s.dir, name)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("record spool: %w", err)
	}
	payloads, dmg, v1 := scanSegment(data)
	aside := false
	for _, d := range dmg {
		if d.torn && newest && d.off+d.size == int64(len(data)) {
			s.log.Warn("record spool: cut a torn last frame (an append a crash cut short before its fsync: the records of the calls answered in the last group-commit window)",
				"file", name, "offset", d.off, "bytes_cut", d.size)
			continue
		}
		aside = true
		lost += d.records
		s.log.Error("record spool: a damaged part of a segment was skipped; its records are lost, the records around it are kept",
			"file", name, "offset", d.off, "bytes", d.size, "records_lost", d.records, "ids_lost", d.ids,
			"kept_aside", name+damagedSuffix)
	}
	if aside {
		// A hard link: the damaged bytes stay on disk as they were found,
		// whatever becomes of the segment.
		os.Remove(path + damagedSuffix)
		if err := os.Link(path, path+damagedSuffix); err != nil {
			return 0, 0, 0, fmt.Errorf("record spool: keep %s aside: %w", name, err)
		}
	}
	if len(payloads) == 0 {
		if err := os.Remove(path); err != nil {
			return 0, 0, 0, fmt.Errorf("record spool: %w", err)
		}
		return 0, 0, lost, nil
	}
	if len(dmg) == 0 && !v1 {
		return int64(len(data)), int64(len(payloads)), 0, nil
	}
	var clean []byte
	for _, p := range payloads {
		clean = appendFrame(clean, p)
	}
	if err := replaceFile(path, clean); err != nil {
		return 0, 0, 0, fmt.Errorf("record spool: rewrite %s: %w", name, err)
	}
	if v1 {
		s.log.Info("record spool: a segment of the first format rewritten in the current one", "file", name, "records", len(payloads))
	}
	return int64(len(clean)), int64(len(payloads)), lost, nil
}

// replaceFile puts data at path through a synced temporary file, so that
// a crash leaves either the old file or the new one.
func replaceFile(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// Admit reports whether a call may start: ErrFull while the records the
// database has not taken fill MaxBytes.
func (s *Spool) Admit() error {
	if s.full.Load() {
		return ErrFull
	}
	return nil
}

// pending adds to the pending counts. Called with mu held.
func (s *Spool) pending(bytes, records int64) {
	s.stats.PendingBytes += bytes
	s.stats.PendingRecords += records
	s.full.Store(s.stats.PendingBytes >= s.opts.MaxBytes)
}

// Stats returns the counters.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// WriteRecords appends recs and returns once they are synced. Calls may
// overlap (the Recorder keeps a few in flight): each appends at once, even
// while an fsync runs, and one fsync covers all the appends made before
// it began; that is the group commit. It implements engine.RecordSink.
func (s *Spool) WriteRecords(_ context.Context, recs []engine.Record) error {
	if len(recs) == 0 {
		return nil
	}
	buf := make([]byte, 0, 256*len(recs))
	for i := range recs {
		start := len(buf)
		buf = append(buf, make([]byte, frameHead)...)
		var err error
		if buf, err = appendRecord(buf, &recs[i]); err != nil {
			return fmt.Errorf("record spool: encode record %s: %w", recs[i].ID, err)
		}
		putFrameHead(buf[start:])
	}
	g, err := s.append(buf, recs)
	if err != nil {
		return err
	}
	return s.commit(g)
}

// append writes buf (the frames of recs) at the end of the active segment
// and returns the group commit that will sync it.
func (s *Spool) append(buf []byte, recs []engine.Record) (*commit, error) {
	n := int64(len(recs))
	s.wmu.Lock()
	defer s.wmu.Unlock()
	f, end, err := s.appendTarget()
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(buf); err != nil {
		// Cut what part of the batch got in, so the segment stays a
		// sequence of whole frames (O_APPEND: the next write goes to
		// the new end).
		f.Truncate(end)
		return nil, fmt.Errorf("record spool: append %d records: %w", n, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last := &s.segs[len(s.segs)-1]
	if s.recentBytes+int64(len(buf)) <= recentMax {
		// The Recorder hands each batch over for good: keeping it is safe.
		s.recent = append(s.recent, recentBatch{seq: last.seq, off: last.written, size: int64(len(buf)), recs: recs})
		s.recentBytes += int64(len(buf))
	}
	last.written += int64(len(buf))
	last.frames += n
	return s.group, nil
}

// commit waits until g ran: the first waiter to take smu runs the fsync
// for every append made so far, those of later groups included; the others
// find it done.
func (s *Spool) commit(g *commit) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	select {
	case <-g.done:
		return g.err
	default: // g is the open group: run it
	}
	type tail struct {
		seq           uint64
		f             *os.File
		written, recs int64
	}
	s.mu.Lock()
	s.group = newCommit()
	var tails []tail
	for _, seg := range s.segs {
		if seg.written > seg.size {
			f := seg.f
			if f == nil {
				f = s.active // only the last segment has no handle of its own
			}
			tails = append(tails, tail{seg.seq, f, seg.written, seg.frames})
		}
	}
	s.mu.Unlock()
	var err error
	for _, t := range tails {
		if err = s.sync(t.f); err != nil {
			break
		}
	}
	if err != nil {
		err = fmt.Errorf("record spool: sync: %w", err)
		s.cutUnsynced(err)
	} else {
		s.mu.Lock()
		for _, t := range tails {
			// The drainer may have dropped older segments meanwhile, not
			// these: it drops a segment only once it is synced whole.
			i := slices.IndexFunc(s.segs, func(seg segment) bool { return seg.seq == t.seq })
			seg := &s.segs[i]
			s.pending(t.written-seg.size, t.recs)
			s.stats.Appended += t.recs
			seg.size, seg.frames = t.written, seg.frames-t.recs
			if seg.f != nil && seg.written == seg.size {
				seg.f.Close()
				seg.f = nil
			}
		}
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	g.err = err
	close(g.done)
	return err
}

// cutUnsynced truncates every segment to what was synced, after a failed
// fsync: what the disk holds past it is unknown. The appends made since
// the failed fsync began are cut too, so their group fails with err as
// well. Called with smu held.
func (s *Spool) cutUnsynced(err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.segs {
		seg := &s.segs[i]
		if seg.written == seg.size {
			continue
		}
		f := cmp.Or(seg.f, s.active)
		f.Truncate(seg.size)
		// The next append reuses these offsets: what memory holds of
		// them is no longer in the file.
		s.recent = slices.DeleteFunc(s.recent, func(b recentBatch) bool {
			cut := b.seq == seg.seq && b.off >= seg.size
			if cut {
				s.recentBytes -= b.size
			}
			return cut
		})
		seg.written, seg.frames = seg.size, 0
		if seg.f != nil {
			seg.f.Close()
			seg.f = nil
		}
	}
	s.group.err = err
	close(s.group.done)
	s.group = newCommit()
}

// appendTarget is the file appends go to and its end, after opening a new
// segment when one is due. Called with wmu held.
func (s *Spool) appendTarget() (*os.File, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, ErrClosed
	}
	if err := s.rotateIfDue(); err != nil {
		return nil, 0, err
	}
	return s.active, s.segs[len(s.segs)-1].written, nil
}

// rotateIfDue opens a new segment for appending when there is none yet,
// when the last one reached SegmentBytes, or when the drainer has written
// all of a last one past rotateCaughtUp. Called with mu held.
func (s *Spool) rotateIfDue() error {
	if s.active != nil {
		last := s.segs[len(s.segs)-1]
		caughtUp := len(s.segs) == 1 && s.drainOff == last.size
		if last.written < s.opts.SegmentBytes && !(caughtUp && last.size >= rotateCaughtUp) {
			return nil
		}
	}
	var seq uint64 = 1
	if len(s.segs) > 0 {
		seq = s.segs[len(s.segs)-1].seq + 1
	}
	f, err := os.OpenFile(filepath.Join(s.dir, segName(seq)), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("record spool: new segment: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		f.Close()
		return err
	}
	if s.active != nil {
		// Bytes still to sync keep the handle until the fsync that covers them.
		if last := &s.segs[len(s.segs)-1]; last.written > last.size {
			last.f = s.active
		} else {
			s.active.Close()
		}
	}
	s.active = f
	s.segs = append(s.segs, segment{seq: seq})
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("record spool: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("record spool: sync %s: %w", dir, err)
	}
	return nil
}

// Close stops appends and drains what it can until ctx ends; what is left
// stays on disk for the next Open.
func (s *Spool) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	var err error
	select {
	case <-s.drainerDone:
	case <-ctx.Done():
		s.stopDrain()
		<-s.drainerDone
		err = ctx.Err()
	}
	s.stopDrain()
	s.smu.Lock() // an append or fsync in progress ends first
	defer s.smu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if s.active != nil {
		s.active.Close()
	}
	for _, seg := range s.segs {
		if seg.f != nil {
			seg.f.Close()
		}
	}
	st := s.stats
	if st.PendingRecords == 0 {
		// Every record is in the database: the segments it drained (the one
		// appends went to included) would be written again by the next start
		// on the directory — into another database, if that start names one.
		for _, seg := range s.segs {
			if err := os.Remove(filepath.Join(s.dir, segName(seg.seq))); err != nil {
				s.log.Warn("record spool: a drained segment could not be removed", "file", segName(seg.seq), "err", err)
			}
		}
		s.segs = nil
	}
	s.mu.Unlock()
	if st.PendingRecords > 0 {
		s.log.Warn("execution records left in the spool for the next start on it", "records", st.PendingRecords, "dir", s.dir)
	}
	s.lock.Close()
	return err
}

// Register adds the spool's gauges to reg:
// blindexec_record_spool_pending_records, _pending_bytes,
// blindexec_record_spool_database_down (1 while writes fail) and
// blindexec_record_spool_lost_records_total. Calls
// refused for a full spool are counted by blindexec_tool_calls_total with
// outcome records_unavailable.
func (s *Spool) Register(reg prometheus.Registerer) error {
	gauge := func(name, help string, v func(Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(s.Stats()) })
	}
	for _, c := range []prometheus.Collector{
		gauge("blindexec_record_spool_pending_records", "Execution records in the spool the database has not taken.",
			func(st Stats) float64 { return float64(st.PendingRecords) }),
		gauge("blindexec_record_spool_pending_bytes", "Bytes of execution records in the spool the database has not taken.",
			func(st Stats) float64 { return float64(st.PendingBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "blindexec_record_spool_lost_records_total",
			Help: "Execution records lost to damaged spool frames (each logged with its id where legible)."},
			func() float64 { return float64(s.Stats().Lost) }),
		gauge("blindexec_record_spool_database_down", "1 while the database is not taking execution records.",
			func(st Stats) float64 {
				if st.DatabaseDown {
					return 1
				}
				return 0
			}),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
