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

func TestHeld(t *testing.T) {
	body := []byte(`{"q":"acme"}`)
	read := Hold(body)
	if _, err := read.Read(make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    io.Reader
		ok   bool
	}{
		{"held, unread", Hold(body), true},
		{"held, read from", read, false},
		{"another reader", bytes.NewReader(body), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := Bytes(tc.r)
			if ok != tc.ok || ok && string(b) != string(body) {
				t.Errorf("Bytes = %q, %v; want ok %v", b, ok, tc.ok)
			}
		})
	}
	// Read as a body, a held one gives its bytes once, and closes.
	h := Hold(body)
	got, err := io.ReadAll(h)
	if err != nil || string(got) != string(body) || h.Close() != nil {
		t.Errorf("ReadAll = %q, %v", got, err)
	}
}
