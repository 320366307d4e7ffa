package recordspool_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/recordspool"
	"github.com/blindexec/blindexec/internal/logbuf"
)

// spooled writes records(0, n) to a spool in a fresh directory with the
// database down and returns the directory and its only segment.
func spooled(t *testing.T, n int) (dir, seg string) {
	t.Helper()
	dir = t.TempDir()
	db := newDatabase()
	db.setDown(true)
	s := open(t, dir, db, recordspool.Options{})
	if err := s.WriteRecords(context.Background(), records(0, n)); err != nil {
		t.Fatal(err)
	}
	closeNow(t, s)
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
	if len(segs) != 1 {
		t.Fatalf("%d segments, want 1", len(segs))
	}
	return dir, segs[0]
}

func without(recs []engine.Record, i int) []engine.Record {
	return slices.Delete(slices.Clone(recs), i, i+1)
}

// Issue 30, point 6: one flipped byte in the middle of a segment loses the
// one record it hit (it lost every later one, 20 of 40); the segment as
// found is kept aside, and the log names the record lost.
func TestDamagedFrameLosesOnlyItself(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(span [2]int) int // the byte flipped in frame 20
	}{
		{"payload", func(span [2]int) int { return span[0] + 40 }},
		{"sync word", func(span [2]int) int { return span[0] + 1 }},
		{"length", func(span [2]int) int { return span[0] + 5 }},
		{"checksum", func(span [2]int) int { return span[0] + 9 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, seg := spooled(t, 40)
			data, _ := os.ReadFile(seg)
			spans := recordspool.FrameSpans(data)
			if len(spans) != 40 {
				t.Fatalf("%d frames, want 40", len(spans))
			}
			data[tc.at(spans[20])] ^= 0x40
			os.WriteFile(seg, data, 0o600)

			db := newDatabase()
			var logs logbuf.Buffer
			s := open(t, dir, db, recordspool.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if st := s.Stats(); st.Recovered != 39 || st.Lost != 1 {
				t.Errorf("Recovered = %d, Lost = %d; want 39 and 1", st.Recovered, st.Lost)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			db.check(t, without(records(0, 40), 20))
			line := logs.String()
			for _, want := range []string{"a damaged part of a segment was skipped", "records_lost=1", "ids_lost=[rec-000020]",
				"offset=" + strconv.Itoa(spans[20][0]), "kept_aside=seg-0000000000000001.spool.damaged"} {
				if !strings.Contains(line, want) {
					t.Errorf("log lacks %q:\n%s", want, line)
				}
			}
			if strings.Contains(line, "torn") {
				t.Errorf("damage in the middle blamed on a torn tail:\n%s", line)
			}
			aside, err := os.ReadFile(seg + ".damaged")
			if err != nil || !bytes.Equal(aside, data) {
				t.Errorf("the damaged segment was not kept aside as found (err %v)", err)
			}
		})
	}
}

// A frame damaged after recovery checked it (a disk fault while the
// database was down) is skipped by the drainer; the frames after it are
// written.
func TestDrainSkipsADamagedFrame(t *testing.T) {
	dir, seg := spooled(t, 40)
	db := newDatabase()
	db.setDown(true)
	var logs logbuf.Buffer
	s := open(t, dir, db, recordspool.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	data, _ := os.ReadFile(seg)
	spans := recordspool.FrameSpans(data)
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{data[spans[7][0]+30] ^ 1}, int64(spans[7][0]+30))
	f.Close()
	db.setDown(false)
	waitFor(t, "the drain", func() bool { return s.Stats().PendingRecords == 0 })
	if lost := s.Stats().Lost; lost != 1 {
		t.Errorf("Lost = %d, want 1", lost)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.check(t, without(records(0, 40), 7))
	if !strings.Contains(logs.String(), "ids_lost=[rec-000007]") {
		t.Errorf("the lost record is not named:\n%s", logs.String())
	}
	if _, err := os.Stat(seg + ".damaged"); err != nil {
		t.Errorf("the damaged segment was not kept aside: %v", err)
	}
}

// Segments of the first format (no sync word), as the writer before issue
// 30 left them, still drain after an upgrade.
func TestFirstFormatStillDrains(t *testing.T) {
	dir := t.TempDir()
	old, _ := filepath.Glob("testdata/v1spool/seg-*")
	if len(old) != 3 {
		t.Fatalf("%d segments in testdata/v1spool, want 3", len(old))
	}
	for _, p := range old {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(b, []byte{0xFE, 0xFF}) || binary.LittleEndian.Uint32(b) > 1<<20 {
			t.Fatalf("%s is not of the first format", p)
		}
		os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o600)
	}
	db := newDatabase()
	s := open(t, dir, db, recordspool.Options{})
	if got := s.Stats().Recovered; got != 40 {
		t.Errorf("Recovered = %d, want 40", got)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var want []engine.Record // as they were written: in batches of 5
	for i := 0; i < 40; i += 5 {
		want = append(want, records(i, 5)...)
	}
	db.check(t, want)
}

// FuzzDamage: whatever bytes of a segment are flipped, every frame none
// of whose bytes was touched reaches the database.
func FuzzDamage(f *testing.F) {
	f.Add([]byte{0, 10, 1})
	f.Add([]byte{0, 0, 0xFF, 0, 1, 0xFF, 0, 2, 0xFF, 0, 3, 0xFF})
	f.Add([]byte{3, 0, 0x40, 7, 200, 0x01})
	f.Fuzz(func(t *testing.T, flips []byte) {
		dir, seg := spooled(t, 20)
		data, _ := os.ReadFile(seg)
		spans := recordspool.FrameSpans(data)
		hit := make([]bool, len(data))
		// Each three bytes: an offset (two bytes) and the bits to flip.
		for ; len(flips) >= 3; flips = flips[3:] {
			at := int(binary.BigEndian.Uint16(flips)) % len(data)
			if flips[2] != 0 {
				data[at] ^= flips[2]
				hit[at] = true
			}
		}
		os.WriteFile(seg, data, 0o600)

		db := newDatabase()
		s := open(t, dir, db, recordspool.Options{Logger: slog.New(slog.DiscardHandler)})
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i, r := range records(0, 20) {
			if slices.Contains(hit[spans[i][0]:spans[i][1]], true) {
				continue
			}
			if db.rows[r.ID] != r {
				t.Errorf("intact frame %d (%s) lost: read back as %+v", i, r.ID, db.rows[r.ID])
			}
		}
	})
}
