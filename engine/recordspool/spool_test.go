package recordspool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/recordspool"
	"github.com/blindexec/blindexec/internal/logbuf"
)

// database is a RecordSink standing in for the store: it fails while
// down, and keeps the first copy of each id, as the store does.
type database struct {
	mu     sync.Mutex
	down   bool
	rows   map[string]engine.Record
	order  []string
	writes int
}

func newDatabase() *database { return &database{rows: map[string]engine.Record{}} }

func (d *database) WriteRecords(_ context.Context, recs []engine.Record) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writes++
	if d.down {
		return errors.New("dial tcp 127.0.0.1:3306: connect: connection refused")
	}
	for _, r := range recs {
		if _, ok := d.rows[r.ID]; !ok {
			d.rows[r.ID] = r
			d.order = append(d.order, r.ID)
		}
	}
	return nil
}

// check: the database holds want, in the order of appends, each record
// as it was handed over.
func (d *database) check(t *testing.T, want []engine.Record) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.rows) != len(want) {
		t.Fatalf("database holds %d records, want %d", len(d.rows), len(want))
	}
	for i, r := range want {
		if got := d.rows[r.ID]; got != r {
			t.Errorf("record %d read back as %+v, want %+v", i, got, r)
		}
		if d.order[i] != r.ID {
			t.Errorf("record %d written as %s, want the order of appends", i, d.order[i])
		}
	}
}

func (d *database) setDown(down bool) {
	d.mu.Lock()
	d.down = down
	d.mu.Unlock()
}

func (d *database) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.rows)
}

func records(from, n int) []engine.Record {
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	recs := make([]engine.Record, n)
	for i := range recs {
		recs[i] = engine.Record{
			ID: fmt.Sprintf("rec-%06d", from+i), PluginName: "weather", UserID: 7, Status: engine.StatusOK,
			HTTPStatus: 200, LatencyMS: int64(i), Attempts: 1, CreatedAt: base.Add(time.Duration(from+i) * time.Second),
		}
	}
	return recs
}

func open(t *testing.T, dir string, db engine.RecordSink, opts recordspool.Options) *recordspool.Spool {
	t.Helper()
	opts.MinBackoff, opts.MaxBackoff = time.Millisecond, 5*time.Millisecond
	s, err := recordspool.Open(dir, db, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// waitFor polls cond until it holds; the bound only keeps a broken
// spool from hanging the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func closeNow(t *testing.T, s *recordspool.Spool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Close(ctx)
}

func TestRecordsReachTheDatabaseWithTheirTimes(t *testing.T) {
	db := newDatabase()
	s := open(t, t.TempDir(), db, recordspool.Options{BatchSize: 7})
	want := records(0, 50)
	for i := 0; i < len(want); i += 10 {
		if err := s.WriteRecords(context.Background(), want[i:i+10]); err != nil {
			t.Fatalf("WriteRecords: %v", err)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	db.check(t, want)
	if st := s.Stats(); st.PendingRecords != 0 || st.PendingBytes != 0 || st.Appended != 50 || st.Drained != 50 {
		t.Errorf("Stats = %+v", st)
	}
}

// The drainer lets records gather into a batch for Gather, writes a full
// batch at once, and writes what is gathering when the spool closes.
func TestDrainGathersBatches(t *testing.T) {
	writes := func(db *database) int {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.writes
	}
	t.Run("a window", func(t *testing.T) {
		db := newDatabase()
		s := open(t, t.TempDir(), db, recordspool.Options{BatchSize: 100, Gather: 300 * time.Millisecond})
		defer closeNow(t, s)
		want := records(0, 3)
		for i := range want { // three appends, each synced before the next
			if err := s.WriteRecords(context.Background(), want[i:i+1]); err != nil {
				t.Fatalf("WriteRecords: %v", err)
			}
		}
		waitFor(t, "the records in the database", func() bool { return db.count() == 3 })
		if n := writes(db); n != 1 {
			t.Errorf("three appends reached the database in %d writes, want one", n)
		}
	})
	t.Run("a full batch", func(t *testing.T) {
		db := newDatabase()
		s := open(t, t.TempDir(), db, recordspool.Options{BatchSize: 4, Gather: time.Hour})
		defer closeNow(t, s)
		want := records(0, 4)
		for i := range want {
			if err := s.WriteRecords(context.Background(), want[i:i+1]); err != nil {
				t.Fatalf("WriteRecords: %v", err)
			}
		}
		waitFor(t, "a full batch written before its window ends", func() bool { return db.count() == 4 })
	})
	t.Run("close", func(t *testing.T) {
		db := newDatabase()
		s := open(t, t.TempDir(), db, recordspool.Options{Gather: time.Hour})
		want := records(0, 2)
		if err := s.WriteRecords(context.Background(), want); err != nil {
			t.Fatalf("WriteRecords: %v", err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		db.check(t, want)
	})
}

func TestOutage(t *testing.T) {
	db := newDatabase()
	var logs logbuf.Buffer
	dir := t.TempDir()
	s := open(t, dir, db, recordspool.Options{BatchSize: 16, SegmentBytes: 1024,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer closeNow(t, s)

	db.setDown(true)
	for i := range 20 {
		if err := s.WriteRecords(context.Background(), records(i*10, 10)); err != nil {
			t.Fatalf("WriteRecords while the database is down: %v", err)
		}
	}
	waitFor(t, "several failed writes", func() bool { db.mu.Lock(); defer db.mu.Unlock(); return db.writes > 3 })
	if st := s.Stats(); st.PendingRecords != 200 || !st.DatabaseDown {
		t.Fatalf("Stats during the outage = %+v, want 200 pending and the database down", st)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "seg-*")); len(segs) < 2 {
		t.Errorf("%d segment files, want several (SegmentBytes 1024)", len(segs))
	}

	db.setDown(false)
	waitFor(t, "the backlog written", func() bool { return db.count() == 200 })
	waitFor(t, "the stats caught up", func() bool { return s.Stats().PendingRecords == 0 })
	if n := strings.Count(logs.String(), "not taking them"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "taking them again"); n != 1 || strings.Count(logs.String(), "pending=200") != 1 {
		t.Errorf("the recovery was logged %d times (want once, with pending=200):\n%s", n, logs.String())
	}
	// Drained segments are deleted, all but the one appends go to.
	if segs, _ := filepath.Glob(filepath.Join(dir, "seg-*")); len(segs) != 1 {
		t.Errorf("segment files after draining: %v, want one", segs)
	}
}

func TestFullSpoolRefusesAdmission(t *testing.T) {
	db := newDatabase()
	db.setDown(true)
	s := open(t, t.TempDir(), db, recordspool.Options{MaxBytes: 2000})
	defer closeNow(t, s)
	for s.Admit() == nil {
		if err := s.WriteRecords(context.Background(), records(int(s.Stats().Appended), 1)); err != nil {
			t.Fatalf("WriteRecords: %v", err)
		}
	}
	if err := s.Admit(); !errors.Is(err, recordspool.ErrFull) {
		t.Fatalf("Admit = %v, want ErrFull", err)
	}
	// A call already made still records past the bound.
	if err := s.WriteRecords(context.Background(), records(1000, 1)); err != nil {
		t.Fatalf("WriteRecords past the bound: %v", err)
	}
	db.setDown(false)
	waitFor(t, "room again", func() bool { return s.Admit() == nil })
}

func TestRestartWritesWhatTheSpoolHeld(t *testing.T) {
	dir := t.TempDir()
	db := newDatabase()
	db.setDown(true)
	s := open(t, dir, db, recordspool.Options{})
	var want []engine.Record
	for i := range 5 {
		recs := records(i*3, 3)
		want = append(want, recs...)
		if err := s.WriteRecords(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
	}
	closeNow(t, s) // the database is down: the records stay on disk

	// A crash in the middle of an append leaves a torn last frame.
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
	f, err := os.OpenFile(segs[len(segs)-1], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0xFE, 0xFF, 'B', 'X', 200, 0, 0, 0, 1, 2, 3, 4, '{', '"'})
	f.Close()

	db.setDown(false)
	var logs logbuf.Buffer
	s = open(t, dir, db, recordspool.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if got := s.Stats().Recovered; got != 15 {
		t.Errorf("Recovered = %d, want 15", got)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.check(t, want) // read from the segments: nothing of them is in memory
	if strings.Count(logs.String(), "cut a torn last frame") != 1 || strings.Count(logs.String(), "damaged") != 0 {
		t.Errorf("the torn tail was not logged:\n%s", logs.String())
	}
	// What went in is gone from disk; a third start finds nothing.
	s = open(t, dir, db, recordspool.Options{})
	defer closeNow(t, s)
	if got := s.Stats().Recovered; got != 0 {
		t.Errorf("third start recovered %d records, want 0", got)
	}
}

func TestOneProcessPerDirectory(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, newDatabase(), recordspool.Options{})
	defer closeNow(t, s)
	_, err := recordspool.Open(dir, newDatabase(), recordspool.Options{})
	var de *recordspool.DirError
	if !errors.As(err, &de) || !errors.Is(err, recordspool.ErrInUse) || de.Pid != os.Getpid() || de.Dir != dir {
		t.Fatalf("a second Open on the directory = %v, want a DirError naming the directory and the holder's pid %d", err, os.Getpid())
	}
	if err := recordspool.Probe(dir); !errors.Is(err, recordspool.ErrInUse) {
		t.Errorf("Probe of a held directory = %v, want ErrInUse", err)
	}
	// A path that is a file is no spool either.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	for _, p := range []string{file, filepath.Join(file, "spool")} {
		if err := recordspool.Probe(p); !errors.As(err, &de) || !strings.Contains(err.Error(), "not a directory") {
			t.Errorf("Probe(%s) = %v, want a DirError saying not a directory", p, err)
		}
	}
}

func TestWriteAfterClose(t *testing.T) {
	s := open(t, t.TempDir(), newDatabase(), recordspool.Options{})
	closeNow(t, s)
	if err := s.WriteRecords(context.Background(), records(0, 1)); !errors.Is(err, recordspool.ErrClosed) {
		t.Fatalf("WriteRecords after Close = %v, want ErrClosed", err)
	}
}

// heldSync stands in for fsync: the first call waits for release and then
// syncs, or fails with fail when set; it counts the calls.
type heldSync struct {
	entered, release chan struct{}
	fail             error
	mu               sync.Mutex
	calls            int
}

func newHeldSync(fail error) *heldSync {
	return &heldSync{entered: make(chan struct{}), release: make(chan struct{}), fail: fail}
}

func (h *heldSync) sync(f *os.File) error {
	h.mu.Lock()
	h.calls++
	first := h.calls == 1
	h.mu.Unlock()
	if first {
		close(h.entered)
		<-h.release
		if h.fail != nil {
			return h.fail
		}
	}
	return f.Sync()
}

func (h *heldSync) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// afterKill is what a start on the spool would find if its process were
// killed now: the records its segment files hold, as the OS has them.
func afterKill(t *testing.T, dir string) int64 {
	t.Helper()
	copyDir := t.TempDir()
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copyDir, filepath.Base(seg)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db := newDatabase()
	db.setDown(true)
	s := open(t, copyDir, db, recordspool.Options{Logger: slog.New(slog.DiscardHandler)})
	defer closeNow(t, s)
	return s.Stats().Recovered
}

// writeAsync runs WriteRecords in a goroutine; the channel gets its error.
func writeAsync(s *recordspool.Spool, recs []engine.Record) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.WriteRecords(context.Background(), recs) }()
	return done
}

// Issue 15, point 3: a batch handed over while the previous batch's fsync
// runs is in the file at once (a kill -9 keeps it), and one fsync then
// covers every batch appended meanwhile: no batch waits for two.
func TestAppendWhileAnFsyncRuns(t *testing.T) {
	dir := t.TempDir()
	db := newDatabase()
	db.setDown(true) // the records stay in the spool's files
	s := open(t, dir, db, recordspool.Options{})
	defer closeNow(t, s)
	h := newHeldSync(nil)
	recordspool.SetSync(s, h.sync)

	a := writeAsync(s, records(0, 3))
	<-h.entered // a's fsync runs
	b, c := writeAsync(s, records(3, 3)), writeAsync(s, records(6, 3))
	waitFor(t, "b and c appended", func() bool { return recordspool.Unsynced(s) == 9 })
	if got := afterKill(t, dir); got != 9 {
		t.Errorf("a kill -9 during the first fsync would keep %d records, want 9 (the batches appended during it too)", got)
	}
	select {
	case err := <-b:
		t.Fatalf("WriteRecords returned (%v) before an fsync covered its batch", err)
	default:
	}
	close(h.release)
	for name, done := range map[string]<-chan error{"a": a, "b": b, "c": c} {
		if err := <-done; err != nil {
			t.Errorf("WriteRecords %s: %v", name, err)
		}
	}
	if n := h.count(); n != 2 {
		t.Errorf("%d fsyncs for three batches, two of them appended during the first fsync: want 2", n)
	}
	if st := s.Stats(); st.PendingRecords != 9 || st.Appended != 9 {
		t.Errorf("Stats = %+v, want 9 pending and appended", st)
	}
}

// A failed fsync fails its batch and those appended while it ran, and
// cuts them from the file (what the disk holds of them is unknown; the
// Recorder retries them); the spool goes on.
func TestFailedFsyncCutsWhatItCovered(t *testing.T) {
	dir := t.TempDir()
	db := newDatabase()
	db.setDown(true)
	s := open(t, dir, db, recordspool.Options{})
	defer closeNow(t, s)
	h := newHeldSync(errors.New("input/output error"))
	recordspool.SetSync(s, h.sync)

	a := writeAsync(s, records(0, 3))
	<-h.entered
	b := writeAsync(s, records(3, 3))
	waitFor(t, "b appended", func() bool { return recordspool.Unsynced(s) == 6 })
	close(h.release)
	for name, done := range map[string]<-chan error{"a": a, "b": b} {
		if err := <-done; err == nil || !strings.Contains(err.Error(), "input/output error") {
			t.Errorf("WriteRecords %s = %v, want the fsync's error", name, err)
		}
	}
	if got := afterKill(t, dir); got != 0 {
		t.Errorf("the spool's files hold %d records after the failed fsync, want them cut", got)
	}
	if err := s.WriteRecords(context.Background(), records(6, 3)); err != nil {
		t.Fatalf("WriteRecords after the failed fsync: %v", err)
	}
	if got, st := afterKill(t, dir), s.Stats(); got != 3 || st.PendingRecords != 3 {
		t.Errorf("after a good write: %d records in the files, Stats %+v; want 3 and 3 pending", got, st)
	}
	// The good write took the offsets of the cut ones: the database gets
	// it, not what was cut.
	db.setDown(false)
	waitFor(t, "the good write drained", func() bool { return s.Stats().PendingRecords == 0 })
	db.check(t, records(6, 3))
}

// TestCleanCloseLeavesNothing: a spool closed with every record in the
// database leaves none on disk. The segment appends went to was kept,
// drained, and the next start wrote its records again: to the same
// database as duplicates it skips, but to another one (serve restarted on
// BLINDEXEC_DB=mysql:… in the directory a SQLite run used) as records
// of calls it never saw, with a log saying records were found.
func TestCleanCloseLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, newDatabase(), recordspool.Options{})
	if err := s.WriteRecords(context.Background(), records(0, 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	other := newDatabase()
	s = open(t, dir, other, recordspool.Options{})
	defer closeNow(t, s)
	if got := s.Stats().Recovered; got != 0 {
		t.Errorf("the next start recovered %d records, want 0: they were in the database already", got)
	}
	if n := other.count(); n != 0 {
		t.Errorf("the next start wrote %d records to its database, want 0", n)
	}
}
