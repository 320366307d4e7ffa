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

// FrameSpans returns where each frame of an intact segment starts and ends.
func FrameSpans(data []byte) [][2]int {
	var spans [][2]int
	for off := 0; off < len(data); {
		_, n, ok := parseFrame(data[off:])
		if !ok {
			break
		}
		spans = append(spans, [2]int{off, off + n})
		off += n
	}
	return spans
}
