package recordspool_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/blindexec/blindexec/engine/recordspool"
)

// FuzzRecover: whatever a crash or a bad disk leaves after the last whole
// frame, Open keeps the frames before it and cuts the rest, without
// panicking.
func FuzzRecover(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{200, 0, 0, 0, 1, 2, 3, 4, '{', '"'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, '{', '}'})
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		db := newDatabase()
		db.setDown(true)
		s := open(t, dir, db, recordspool.Options{})
		if err := s.WriteRecords(context.Background(), records(0, 3)); err != nil {
			t.Fatal(err)
		}
		closeNow(t, s)
		segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
		fh, err := os.OpenFile(segs[0], os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.Write(tail)
		fh.Close()

		db.setDown(false)
		s = open(t, dir, db, recordspool.Options{})
		if got := s.Stats().Recovered; got < 3 {
			t.Fatalf("Recovered = %d, want the 3 whole frames at least", got)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, r := range records(0, 3) {
			if db.rows[r.ID] != r {
				t.Fatalf("record %s read back as %+v", r.ID, db.rows[r.ID])
			}
		}
	})
}
