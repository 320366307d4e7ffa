// Package header reads HTTP header fields by a canonical key without
// canonicalizing it again.
//
// http.Header.Get canonicalizes its key on every call (a scan and, for a
// key not yet canonical, a copy) before the map's lookup: four times the
// lookup's cost, paid a dozen times on every /mcp call for keys that are
// constants. Every key given here must be canonical already
// (http.CanonicalHeaderKey(key) == key); net/http stores the fields it
// reads, and Set and Add the fields they write, under canonical keys, so
// the two reads agree (TestGetAgreesWithHeaderGet).
package header

import "net/http"

// Get is h.Get(key) for a canonical key: the first value, "" when none.
func Get(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Values is h.Values(key) for a canonical key.
func Values(h http.Header, key string) []string { return h[key] }
