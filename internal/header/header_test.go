package header

import (
	"net/http"
	"testing"
)

func TestGetAgreesWithHeaderGet(t *testing.T) {
	h := http.Header{}
	h.Set("mcp-protocol-version", "2026-07-28") // stored canonical
	h.Add("Accept", "application/json")
	h.Add("Accept", "text/event-stream")
	h["X-Empty"] = []string{}
	for _, key := range []string{"Mcp-Protocol-Version", "Accept", "X-Empty", "X-Absent", "Content-Type"} {
		if http.CanonicalHeaderKey(key) != key {
			t.Fatalf("%q is not canonical: the test's keys must be", key)
		}
		if got, want := Get(h, key), h.Get(key); got != want {
			t.Errorf("Get(%q) = %q, Header.Get: %q", key, got, want)
		}
	}
}

func TestGetAllocs(t *testing.T) {
	h := http.Header{"Mcp-Method": {"tools/call"}}
	if n := testing.AllocsPerRun(100, func() { Get(h, "Mcp-Method") }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}
