package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// countingUpstream is an API answering every request {"ok":true} as
// JSON, and how many requests reached it: what the tests count as sent.
// It closes with t.
func countingUpstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var sent atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(up.Close)
	return up, &sent
}
