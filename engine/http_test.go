package engine

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// failing answers the first n requests with status (and Retry-After when
// ra is set), then 200.
func failing(n int32, status int, ra string) (http.HandlerFunc, *atomic.Int32) {
	var seen atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) <= n {
			if ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			w.WriteHeader(status)
			return
		}
		io.WriteString(w, `{"ok":true}`)
	}, &seen
}

func retryDoc(method string, retry string) string {
	return `{"name":"t","description":"d","parameters":{"type":"object"},
	 "execution":{"method":"` + method + `","base_url":"%s/r","timeout_ms":2000,"retry":` + retry + `}}`
}

// Issue 3, point 5: retries only for idempotent methods, on connection
// errors, 429 and 502–504, with backoff and Retry-After, bounded.
func TestRetries(t *testing.T) {
	fast := `{"max_attempts":3,"backoff_ms":1,"max_backoff_ms":5}`
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	tests := []struct {
		name     string
		method   string
		retry    string
		fails    int32
		status   int
		ra       string
		ok       bool
		attempts int
		maxTime  time.Duration
	}{
		{"GET 503 retried", "GET", fast, 2, 503, "", true, 3, time.Second},
		{"PUT 502 retried", "PUT", fast, 1, 502, "", true, 2, time.Second},
		{"DELETE 504 retried", "DELETE", fast, 1, 504, "", true, 2, time.Second},
		{"GET 429 Retry-After seconds, capped by max backoff", "GET", fast, 1, 429, "1", true, 2, 500 * time.Millisecond},
		{"GET gives up after max attempts", "GET", fast, 5, 503, "", false, 3, time.Second},
		{"GET 500 not retried", "GET", fast, 1, 500, "", false, 1, time.Second},
		{"POST 503 never retried", "POST", fast, 1, 503, "", false, 1, time.Second},
		{"PATCH 429 never retried", "PATCH", fast, 1, 429, "", false, 1, time.Second},
		{"Retry-After beyond the timeout stops", "GET", fast, 1, 429, "3600", false, 1, 500 * time.Millisecond},
		{"Retry-After date beyond the timeout stops", "GET", fast, 1, 503, future, false, 1, 500 * time.Millisecond},
		{"retry disabled", "GET", `{"max_attempts":1}`, 1, 503, "", false, 1, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handler, seen := failing(tt.fails, tt.status, tt.ra)
			up := newUpstream(t, handler)
			h := newHarness(t)
			start := time.Now()
			res, err := h.call(t, mustPlugin(t, retryDoc(tt.method, tt.retry), up.URL), `{}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != tt.ok || res.Attempts != tt.attempts || int(seen.Load()) != tt.attempts {
				t.Fatalf("ok=%v attempts=%d (server saw %d), want %v %d: %s", res.OK, res.Attempts, seen.Load(), tt.ok, tt.attempts, resultJSON(t, res))
			}
			if !tt.ok && (res.Error.Code != CodeHTTPError || res.HTTPStatus != tt.status) {
				t.Fatalf("error = %+v status %d", res.Error, res.HTTPStatus)
			}
			if d := time.Since(start); d > tt.maxTime {
				t.Fatalf("took %v, want under %v", d, tt.maxTime)
			}
			recs := h.flush(t)
			if len(recs) != 1 || recs[0].Attempts != tt.attempts {
				t.Fatalf("records = %+v", recs)
			}
		})
	}

	t.Run("connection refused retried for GET", func(t *testing.T) {
		h := newHarness(t)
		res, _ := h.call(t, mustPlugin(t, retryDoc("GET", fast), "http://"+closedPort(t)), `{}`, nil)
		if res.OK || res.Error.Code != CodeTransportError || res.Attempts != 3 {
			t.Fatalf("%s", resultJSON(t, res))
		}
		if !strings.Contains(res.Error.Message, "connection refused") {
			t.Errorf("message %q does not say why", res.Error.Message)
		}
	})
	t.Run("connection refused not retried for POST", func(t *testing.T) {
		h := newHarness(t)
		res, _ := h.call(t, mustPlugin(t, retryDoc("POST", fast), "http://"+closedPort(t)), `{}`, nil)
		if res.OK || res.Error.Code != CodeTransportError || res.Attempts != 1 {
			t.Fatalf("%s", resultJSON(t, res))
		}
	})
}

func TestBackoffGrowsWithJitterUnderTheCap(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // wait returns at once; only the computed delay matters
	for attempt := 1; attempt <= 6; attempt++ {
		d := retryPolicy{attempts: 10, backoff: 100 * time.Millisecond, maxBackoff: 2 * time.Second}.delay(attempt)
		base := min(100*time.Millisecond<<(attempt-1), 2*time.Second)
		if d < base/2 || d > base {
			t.Errorf("attempt %d: backoff %v outside [%v, %v]", attempt, d, base/2, base)
		}
	}
	if (retryPolicy{attempts: 2, backoff: time.Millisecond, maxBackoff: time.Millisecond}).wait(ctx, 1, 0) {
		t.Error("wait after the context ended reported true")
	}
}

// Issue 3, point 5: the per-plugin timeout sits under the global ceiling.
func TestTimeouts(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	tests := []struct {
		name      string
		timeoutMS int
		ceiling   time.Duration
		want      time.Duration
	}{
		{"plugin timeout", 50, 0, 50 * time.Millisecond},
		{"global ceiling wins", 60_000, 80 * time.Millisecond, 80 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, hang)
			h := newHarness(t)
			h.MaxTimeout = tt.ceiling
			p := mustPlugin(t, fmt.Sprintf(`{"name":"t","description":"d","parameters":{"type":"object"},
			  "execution":{"method":"GET","base_url":"%%s/hang","timeout_ms":%d}}`, tt.timeoutMS), up.URL)
			start := time.Now()
			res, _ := h.call(t, p, `{}`, nil)
			d := time.Since(start)
			if res.OK || res.Error.Code != CodeTimeout || res.Attempts != 1 {
				t.Fatalf("%s", resultJSON(t, res))
			}
			if d < tt.want || d > tt.want+2*time.Second {
				t.Fatalf("timed out after %v, want about %v", d, tt.want)
			}
		})
	}
	if got := (&Executor{}).timeout(mustPlugin(t, getDoc, "http://x")); got != DefaultTimeout {
		t.Errorf("default timeout %v", got)
	}
}

// Issue 3, point 5: the body read is capped (after decompression), so an
// endless response never fills memory.
func TestEndlessResponseIsCapped(t *testing.T) {
	chunk := []byte(strings.Repeat("x", 32<<10))
	for _, enc := range []string{"identity", "gzip"} {
		t.Run(enc, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				var out io.Writer = w
				if enc == "gzip" {
					w.Header().Set("Content-Encoding", "gzip")
					gz := gzip.NewWriter(w)
					defer gz.Close()
					out = gz
				}
				for { // about 1 GB, or until the client hangs up
					if _, err := out.Write(chunk); err != nil || r.Context().Err() != nil {
						return
					}
				}
			})
			h := newHarness(t)
			h.MaxResponseBytes = 1 << 20
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, _ := h.call(t, mustPlugin(t, getDoc, up.URL), `{}`, nil)
			runtime.ReadMemStats(&after)
			if res.OK || res.Error.Code != CodeResponseTooLarge || res.HTTPStatus != 200 {
				t.Fatalf("%.300s", resultJSON(t, res))
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
				t.Fatalf("allocated %d bytes reading a capped response", alloc)
			}
			if !strings.Contains(res.Error.Message, "larger than 1048576 bytes") {
				t.Errorf("message %q", res.Error.Message)
			}
		})
	}
}

// Review 69: an empty body is empty whatever content coding its headers
// name (a 204 or a 200 with Content-Encoding: gzip failed the call with
// "could not be decoded: EOF"), and a compression the engine did not ask
// for and cannot undo fails the call naming it, where its compressed bytes
// were the model's output, as text no masking could read.
func TestContentCodings(t *testing.T) {
	var gz strings.Builder
	w := gzip.NewWriter(&gz)
	io.WriteString(w, `{"ok":true}`)
	w.Close()
	tests := []struct {
		name, method, coding, body string
		status                     int
		ok                         bool
		output                     string // the output, or the error's message
	}{
		{"204 gzip empty", "GET", "gzip", "", 204, true, `"(no content: HTTP 204)"`},
		{"200 gzip empty", "GET", "gzip", "", 200, true, `"(no content: HTTP 200)"`},
		{"200 deflate empty", "GET", "deflate", "", 200, true, `"(no content: HTTP 200)"`},
		{"HEAD gzip", "HEAD", "gzip", "", 200, true, `"(no content: HTTP 200)"`},
		{"gzip", "GET", "GZIP", gz.String(), 200, true, `{"ok":true}`},
		{"identity", "GET", "identity", `{"ok":true}`, 200, true, `{"ok":true}`},
		{"br", "GET", "br", "\x1b\x0a\x00\xf8\xa5", 200, false, `the API's response could not be decoded: its content coding "br" is not one the engine asked for (gzip, deflate)`},
		{"zstd", "GET", "zstd", "\x28\xb5\x2f\xfd", 200, false, `its content coding "zstd"`},
		{"two codings", "GET", "gzip, gzip", gz.String(), 200, false, `its content coding "gzip, gzip"`},
		// Review 70: a field sent on two lines is one list (RFC 9110
		// 5.3); only the first line was read, so the second coding
		// reached the model undone.
		{"two codings on two lines", "GET", "gzip\ngzip", gzipped(gz.String()), 200, false, `its content coding "gzip, gzip"`},
		{"identity, then br on another line", "GET", "identity\nbr", "\x1b\x0a\x00\xf8\xa5", 200, false, `its content coding "identity, br"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for _, line := range strings.Split(tt.coding, "\n") {
					w.Header().Add("Content-Encoding", line)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object"},
			  "execution":{"method":"`+tt.method+`","base_url":"%s/x","retry":{"max_attempts":1}}}`, up.URL)
			res, _ := newHarness(t).call(t, p, `{}`, nil)
			if res.OK != tt.ok {
				t.Fatalf("%s", resultJSON(t, res))
			}
			if tt.ok && string(res.Output) != tt.output || !tt.ok && !strings.Contains(res.Error.Message, tt.output) {
				t.Fatalf("%s, want %s", resultJSON(t, res), tt.output)
			}
		})
	}
}

// gzipped is s compressed with gzip.
func gzipped(s string) string {
	var b strings.Builder
	w := gzip.NewWriter(&b)
	io.WriteString(w, s)
	w.Close()
	return b.String()
}

// Review 69: an upstream's response headers are read up to 1 MiB (nginx
// proxies refuse past 8 KiB; net/http's client default was 10 MiB): a
// hostile upstream's 9.6 MiB of headers were accepted, 46 MB allocated for
// one call. Past it the call fails saying so, and little is allocated.
func TestResponseHeadersBounded(t *testing.T) {
	pad := strings.Repeat("a", 64<<10)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		for range 32 { // 2 MiB
			w.Header().Add("X-Pad", pad)
		}
		w.WriteHeader(http.StatusOK)
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, _ := newHarness(t).call(t, mustPlugin(t, getDoc, up.URL), `{}`, nil)
	runtime.ReadMemStats(&after)
	if res.OK || res.Error.Code != CodeTransportError || !strings.Contains(res.Error.Message, "headers exceeded 1048576 bytes") {
		t.Fatalf("%.400s", resultJSON(t, res))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d bytes for refused headers", alloc)
	}
}
