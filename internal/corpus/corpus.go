// Package corpus reads the real-world OpenAPI documents of the shared
// corpus (../shared/corpus beside the repository) for tests.
package corpus

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvDir names the corpus directory when it is not beside the module
// root (a git worktree elsewhere).
const EnvDir = "BLINDEXEC_CORPUS"

// Dir is the corpus directory: $BLINDEXEC_CORPUS, else found beside the
// module root; "" when the checkout has none.
func Dir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			c := filepath.Join(dir, "..", "shared", "corpus")
			if _, err := os.Stat(c); err == nil {
				return c
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Read returns a corpus document's bytes, gunzipped when its name ends in
// .gz; the test is skipped when the corpus is absent.
func Read(tb testing.TB, name string) []byte {
	tb.Helper()
	dir := Dir()
	if dir == "" {
		tb.Skip("corpus not available: ../shared/corpus beside the repository, or $" + EnvDir)
	}
	return File(tb, filepath.Join(dir, name))
}

// File returns the bytes of the document at path (one of the
// repository's test data), gunzipped when its name ends in .gz.
func File(tb testing.TB, path string) []byte {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			tb.Fatal(err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
