package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine"
)

// serveLimits are the limits of `serve` that protect it from its callers:
// server timeouts, per-route deadlines, per-user concurrency. Each comes
// from its BLINDEXEC_ variable (README: configuration), milliseconds for
// durations.
type serveLimits struct {
	header, idle   time.Duration
	maxHeaderBytes int
	deadlines      api.Deadlines
	limiter        *engine.UserLimiter
}

func loadServeLimits() (*serveLimits, error) {
	var l serveLimits
	l.limiter = &engine.UserLimiter{}
	for _, s := range []struct {
		name string
		def  int
		dst  any
	}{
		{"BLINDEXEC_HEADER_TIMEOUT_MS", 10_000, &l.header},
		{"BLINDEXEC_IDLE_TIMEOUT_MS", 120_000, &l.idle},
		{"BLINDEXEC_MAX_HEADER_BYTES", 64 << 10, &l.maxHeaderBytes},
		{"BLINDEXEC_BODY_TIMEOUT_MS", int(api.DefaultBodyTimeout / time.Millisecond), &l.deadlines.Body},
		{"BLINDEXEC_WRITE_TIMEOUT_MS", int(api.DefaultWriteTimeout / time.Millisecond), &l.deadlines.Write},
		{"BLINDEXEC_IMPORT_TIMEOUT_MS", int(api.DefaultImportTimeout / time.Millisecond), &l.deadlines.Import},
		{"BLINDEXEC_MAX_CONCURRENT_PER_USER", 16, &l.limiter.MaxCalls},
		{"BLINDEXEC_MAX_RUNS_PER_USER", 4, &l.limiter.MaxRuns},
	} {
		n := s.def
		if v := os.Getenv(s.name); v != "" {
			var err error
			if n, err = strconv.Atoi(v); err != nil || n < 0 {
				return nil, fmt.Errorf("%s: %q is not a whole number (0 or more)", s.name, v)
			}
		}
		switch d := s.dst.(type) {
		case *time.Duration:
			*d = time.Duration(n) * time.Millisecond
		case *int:
			*d = n
		}
	}
	return &l, nil
}

// httpServer is serve's server on addr: header, idle and header-size
// limits here, body and write deadlines per route in the API (a server
// ReadTimeout or WriteTimeout would cut server-sent events and imports).
func (l *serveLimits) httpServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: l.header, IdleTimeout: l.idle, MaxHeaderBytes: l.maxHeaderBytes}
}
