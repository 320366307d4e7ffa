package recordspool

import "os"

// SetSync replaces the fsync of s, for tests that hold or fail one.
func SetSync(s *Spool, sync func(*os.File) error) { s.sync = sync }

// Unsynced is the number of records appended to s and not yet synced.
func Unsynced(s *Spool) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, seg := range s.segs {
		n += seg.frames
	}
	return n
}
