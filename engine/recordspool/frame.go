package recordspool

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// A frame is one record in a segment: the sync word, the payload's length
// and its CRC-32C (uint32 little-endian each), and the payload, the
// record's JSON. The sync word lets a reader that met a damaged frame find
// the next one: its bytes 0xFE and 0xFF never occur in UTF-8, so never in
// a payload, and read as a length they exceed maxFrame, which tells a
// segment of this format from one of the first (frames without a sync
// word, written up to issue 30), still read after an upgrade.
var frameSync = [4]byte{0xFE, 0xFF, 'B', 'X'}

const (
	frameHead   = 12 // sync word, length, CRC
	v1FrameHead = 8  // length, CRC: the first format
	// maxFrame bounds a frame's payload: a record is at most a few KB, so
	// a larger length can only be a torn or corrupt header.
	maxFrame = 1 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends the frame of payload to b.
func appendFrame(b, payload []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, frameHead)...)
	b = append(b, payload...)
	putFrameHead(b[start:])
	return b
}

// putFrameHead writes the head of frame, whose payload follows it.
func putFrameHead(frame []byte) {
	payload := frame[frameHead:]
	copy(frame, frameSync[:])
	binary.LittleEndian.PutUint32(frame[4:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(frame[8:], crc32.Checksum(payload, crcTable))
}

// parseFrame reads the frame at the start of b: its payload and length,
// or ok false when b holds no whole, intact frame there.
func parseFrame(b []byte) (payload []byte, n int, ok bool) {
	if len(b) < frameHead || !bytes.Equal(b[:4], frameSync[:]) {
		return nil, 0, false
	}
	payload, n, ok = parseV1Frame(b[4:])
	return payload, n + 4, ok
}

// parseV1Frame is parseFrame for the first format.
func parseV1Frame(b []byte) (payload []byte, n int, ok bool) {
	if len(b) < v1FrameHead {
		return nil, 0, false
	}
	size := binary.LittleEndian.Uint32(b)
	if size > maxFrame || int(size) > len(b)-v1FrameHead {
		return nil, 0, false
	}
	payload = b[v1FrameHead : v1FrameHead+int(size)]
	if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, false
	}
	return payload, v1FrameHead + int(size), true
}

// resync returns the offset of the first intact frame of b after from, or
// len(b) when there is none.
func resync(b []byte, from int) int {
	for i := from + 1; i < len(b); {
		j := bytes.Index(b[i:], frameSync[:1])
		if j < 0 {
			break
		}
		i += j
		if _, _, ok := parseFrame(b[i:]); ok {
			return i
		}
		i++
	}
	return len(b)
}

// damage is a run of bytes of a segment that held no intact frame.
type damage struct {
	off, size int64
	// records is how many records it held, as far as can be told: the
	// frames starting in it (sync words) or the record ids in it,
	// whichever is more, and at least one.
	records int64
	ids     []string // the ids of the records it held, where still legible
	// torn: the run ends the segment inside a frame whose declared length
	// runs past the end: an append a crash cut short, never synced.
	torn bool
}

// scanSegment reads a segment: the payloads of its intact frames, in
// order, and the runs of bytes between them that held none. v1 is set
// when the segment is of the first format (a damaged one is read to its
// first bad frame: it has no sync word to resume at).
func scanSegment(data []byte) (payloads [][]byte, dmg []damage, v1 bool) {
	parse := parseFrame
	if len(data) >= 4 && !bytes.Equal(data[:4], frameSync[:]) {
		if _, _, ok := parseV1Frame(data); ok {
			parse, v1 = parseV1Frame, true
		}
	}
	for off := 0; off < len(data); {
		if payload, n, ok := parse(data[off:]); ok {
			payloads = append(payloads, payload)
			off += n
			continue
		}
		next := len(data)
		if !v1 {
			next = resync(data, off)
		}
		dmg = append(dmg, describeDamage(data, off, next, v1))
		off = next
	}
	return payloads, dmg, v1
}

func describeDamage(data []byte, off, end int, v1 bool) damage {
	run := data[off:end]
	d := damage{off: int64(off), size: int64(len(run)), ids: recordIDs(run)}
	d.records = max(int64(bytes.Count(run, frameSync[:])), int64(len(d.ids)), 1)
	if end == len(data) {
		head := frameHead
		if v1 {
			head = v1FrameHead
		}
		size := -1
		if len(run) >= head {
			size = int(binary.LittleEndian.Uint32(run[head-8:]))
		}
		d.torn = len(run) < head || size > len(run)-head && size <= maxFrame
	}
	return d
}

// recordIDs returns the ids legible in b: a record's JSON starts with its
// id ({"id":"...").
func recordIDs(b []byte) []string {
	const key = `{"id":"`
	var ids []string
	for {
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			return ids
		}
		b = b[i+len(key):]
		j := bytes.IndexByte(b, '"')
		if j < 0 || j > 64 {
			continue
		}
		ids = append(ids, string(b[:j]))
		b = b[j:]
	}
}
