package httpbody

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadAll(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name     string
		body     string
		declared int64
	}{
		{"declared", `{"q":"acme"}`, 12},
		{"unknown", `{"q":"acme"}`, -1},
		{"empty", ``, 0},
		{"fewer than declared", `{}`, 10},
		{"more than declared", long, 10},
		{"declared past the presize bound", long, maxPresize + 1},
	} {
		for _, r := range map[string]io.Reader{
			"whole":         strings.NewReader(tc.body),
			"byte a time":   iotest.OneByteReader(strings.NewReader(tc.body)),
			"EOF with data": iotest.DataErrReader(strings.NewReader(tc.body)),
		} {
			got, err := ReadAll(r, tc.declared)
			if err != nil || string(got) != tc.body {
				t.Errorf("%s: got %d bytes (%v), want %d", tc.name, len(got), err, len(tc.body))
			}
		}
	}
	boom := errors.New("boom")
	if got, err := ReadAll(io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(boom)), 5); !errors.Is(err, boom) || string(got) != "ab" {
		t.Errorf("a failing reader: %q, %v", got, err)
	}
}

// A body of its declared length takes one allocation.
func TestReadAllAllocations(t *testing.T) {
	body := []byte(`{"company":"ACME","q":"acme"}`)
	r := bytes.NewReader(body)
	if n := testing.AllocsPerRun(100, func() {
		r.Reset(body)
		ReadAll(r, int64(len(body)))
	}); n != 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}

func FuzzReadAll(f *testing.F) {
	f.Add([]byte(`{"q":"acme"}`), int64(12))
	f.Add([]byte(`{}`), int64(-1))
	f.Fuzz(func(t *testing.T, body []byte, declared int64) {
		got, err := ReadAll(iotest.HalfReader(bytes.NewReader(body)), declared)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("declared %d: got %q (%v), want %q", declared, got, err, body)
		}
	})
}
