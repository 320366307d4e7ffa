package openapi

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// maxEcho bounds the bytes of a document an error of Load may repeat: a
// message names what is wrong, it does not carry the document (a
// megabyte version string, a key, a gzip stream's bytes) into a log or
// an API answer.
const maxEcho = 200

// maxMessage bounds an error's length: what it says of the document and
// the words around it.
const maxMessage = 1024

// FuzzLoadErrors feeds any bytes, gzip-compressed ones among them, to
// Load: it never panics, and an error is at most maxMessage bytes and
// repeats at most maxEcho bytes of the input in a row.
func FuzzLoadErrors(f *testing.F) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte(`{"openapi": "3.1.0"}`))
	_ = w.Close()
	for _, s := range []string{gz.String(), "\x1f", "\x1f\x8b", "  \n", "a: [\n", "openapi: 2.0\n", `{"swagger": "3"}`,
		"{\"openapi\": \"" + string(bytes.Repeat([]byte("9"), 300)) + "\"}", "x: 1\nx: 2\n", "swagger: [" + strings.Repeat("a, ", 100) + "]\n", "{\"a\": x}", "\ufeff{}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Load(data, "doc")
		if err == nil {
			return
		}
		if msg := err.Error(); len(msg) > maxMessage {
			t.Fatalf("an error of %d bytes (at most %d): %.400s…", len(msg), maxMessage, msg)
		}
		if n := longestEcho(err.Error(), data); n > maxEcho {
			t.Fatalf("the error repeats %d bytes of the document (at most %d): %.400s…", n, maxEcho, err)
		}
	})
}

// longestEcho is the length of the longest run of data's bytes that msg
// repeats.
func longestEcho(msg string, data []byte) int {
	m := []byte(msg)
	best := 0
	// Longest common substring, by a rolling row (messages are short).
	prev := make([]int, len(data)+1)
	cur := make([]int, len(data)+1)
	for i := 1; i <= len(m); i++ {
		for j := 1; j <= len(data); j++ {
			if m[i-1] == data[j-1] {
				cur[j] = prev[j-1] + 1
				best = max(best, cur[j])
			} else {
				cur[j] = 0
			}
		}
		prev, cur = cur, prev
	}
	return best
}
