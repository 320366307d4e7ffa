package engine

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// compressions are the content codings that compress, by their names.
var compressions = map[string]bool{"gzip": true, "x-gzip": true, "deflate": true, "br": true, "zstd": true, "compress": true, "x-compress": true, "dcb": true, "dcz": true}

// FuzzDecoded: whatever Content-Encoding lines and body an upstream sends,
// readResponse never panics, never returns more than its cap, and never
// hands over bytes still compressed while saying they were decoded: when
// the field names a compression anywhere in its list, the body is either
// refused or, for the one coding the engine asked for, decoded to exactly
// what an independent decoder reads.
func FuzzDecoded(f *testing.F) {
	// TestContentCodings' rows, and the codings split and spelled otherwise.
	for _, s := range []struct {
		coding  string
		payload string
		wrap    uint8
	}{
		{"gzip", `{"ok":true}`, 1},
		{"GZIP", `{"ok":true}`, 1},
		{"gzip", "", 0},
		{"deflate", "", 0},
		{"deflate", `{"ok":true}`, 2},
		{"deflate", `{"ok":true}`, 3},
		{"identity", `{"ok":true}`, 0},
		{"br", "\x1b\x0a\x00\xf8\xa5", 0},
		{"zstd", "\x28\xb5\x2f\xfd", 0},
		{"gzip, gzip", `{"ok":true}`, 1},
		{"gzip\ngzip", `{"ok":true}`, 4},
		{"identity\nbr", "\x1b\x0a\x00\xf8\xa5", 0},
		{"\ngzip", `{"ok":true}`, 1},
		{"x-gzip ", strings.Repeat("a", 300), 1},
		{"utf-8", `{"ok":true}`, 0},
		{"gzip;q=1", `{"ok":true}`, 1},
	} {
		f.Add(s.coding, []byte(s.payload), s.wrap, uint16(64))
	}
	f.Fuzz(func(t *testing.T, coding string, payload []byte, wrap uint8, limit16 uint16) {
		body := wrapped(payload, wrap%5)
		var wire bytes.Buffer
		wire.WriteString("HTTP/1.1 200 OK\r\n")
		for line := range strings.SplitSeq(coding, "\n") {
			if strings.ContainsAny(line, "\r\x00") {
				return
			}
			wire.WriteString("Content-Encoding: " + line + "\r\n")
		}
		fmt.Fprintf(&wire, "Content-Length: %d\r\n\r\n", len(body))
		wire.Write(body)
		resp, err := http.ReadResponse(bufio.NewReader(&wire), nil)
		if err != nil {
			return // not an answer net/http's client would hand over
		}
		limit := int64(limit16)%4096 + 1
		r, err := readResponse(resp, limit, 1)
		if r != nil && int64(len(r.Body)) > limit {
			t.Fatalf("%d bytes read past the cap of %d", len(r.Body), limit)
		}
		var tooLarge *ToolError
		if err != nil && !(errors.As(err, &tooLarge) && tooLarge.Code == CodeResponseTooLarge) {
			return // refused: nothing reaches the model
		}
		// The list as RFC 9110 reads it: every line, split on commas,
		// without the spaces around each element.
		var tokens []string
		named := false
		for _, v := range resp.Header.Values("Content-Encoding") {
			for tok := range strings.SplitSeq(v, ",") {
				tok = strings.ToLower(strings.Trim(tok, " \t"))
				tokens = append(tokens, tok)
				named = named || compressions[tok]
			}
		}
		if !named || len(body) == 0 {
			return
		}
		if len(tokens) != 1 || tokens[0] != "gzip" && tokens[0] != "x-gzip" && tokens[0] != "deflate" {
			t.Fatalf("Content-Encoding %q: the body was handed over (%d bytes), not refused", resp.Header.Values("Content-Encoding"), len(r.Body))
		}
		want, ierr := independentlyDecoded(tokens[0], body, limit)
		if ierr != nil {
			t.Fatalf("Content-Encoding %q: handed over %q where an independent decoder fails: %v", tokens[0], r.Body, ierr)
		}
		if !bytes.Equal(r.Body, want) {
			t.Fatalf("Content-Encoding %q: handed over %q, decoded it is %q", tokens[0], r.Body, want)
		}
	})
}

// wrapped is payload as the fuzz case sends it: as it is (0), in gzip (1),
// zlib (2), raw deflate (3), or gzip twice (4).
func wrapped(payload []byte, wrap uint8) []byte {
	var b bytes.Buffer
	var w io.WriteCloser
	switch wrap {
	case 0:
		return payload
	case 1:
		w = gzip.NewWriter(&b)
	case 2:
		w = zlib.NewWriter(&b)
	case 3:
		w, _ = flate.NewWriter(&b, flate.DefaultCompression)
	case 4:
		w = gzip.NewWriter(&b)
		payload = wrapped(payload, 1)
	}
	w.Write(payload)
	w.Close()
	return b.Bytes()
}

// independentlyDecoded is body decoded as coding says, up to limit bytes:
// deflate is zlib-wrapped (RFC 9110 8.4.1.2), or raw from the servers that
// get it wrong when the zlib header is not there.
func independentlyDecoded(coding string, body []byte, limit int64) ([]byte, error) {
	var r io.Reader
	var err error
	if coding == "deflate" {
		if r, err = zlib.NewReader(bytes.NewReader(body)); errors.Is(err, zlib.ErrHeader) {
			r, err = flate.NewReader(bytes.NewReader(body)), nil
		}
	} else {
		r, err = gzip.NewReader(bytes.NewReader(body))
	}
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	return b[:min(int64(len(b)), limit)], err
}
