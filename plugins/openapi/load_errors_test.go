package openapi

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// TestLoadSaysWhatItCannotRead: a document Load cannot read is named
// with what is wrong, in a sentence a person can act on — a compressed
// file (the corpus ships .json.gz) says so rather than "control
// characters are not allowed", and an error without a line has no
// empty position ("parse doc.json:: …").
func TestLoadSaysWhatItCannotRead(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte(`{"openapi": "3.1.0"}`))
	_ = w.Close()
	for _, tc := range []struct {
		name, data, want string
	}{
		{"gzip", gz.String(), "parse doc.json.gz: the document is gzip-compressed: decompress it first (gunzip)"},
		{"empty", "  \n", "parse doc.json.gz: the document is empty"},
		{"line", "a: [\n", "parse doc.json.gz: line "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.data), "doc.json.gz")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want an error starting %q", err, tc.want)
			}
		})
	}
}
