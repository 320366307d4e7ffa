package main

import (
	"net/http"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/settings"
)

// serveLimits are the limits of `serve` that protect it from its callers:
// server timeouts, per-route deadlines, per-user concurrency. Each comes
// from its BLINDEXEC_ variable (docs/configuration.md), milliseconds for
// durations.
type serveLimits struct {
	header, idle   time.Duration
	maxHeaderBytes int
	deadlines      api.Deadlines
	limiter        *engine.UserLimiter
}

func loadServeLimits(src *settings.Source) *serveLimits {
	return &serveLimits{
		header:         src.Millis("BLINDEXEC_HEADER_TIMEOUT_MS", 10*time.Second),
		idle:           src.Millis("BLINDEXEC_IDLE_TIMEOUT_MS", 120*time.Second),
		maxHeaderBytes: int(src.Int("BLINDEXEC_MAX_HEADER_BYTES", 64<<10, 1)),
		deadlines: api.Deadlines{
			Body:   src.Millis("BLINDEXEC_BODY_TIMEOUT_MS", api.DefaultBodyTimeout),
			Write:  src.Millis("BLINDEXEC_WRITE_TIMEOUT_MS", api.DefaultWriteTimeout),
			Import: src.Millis("BLINDEXEC_IMPORT_TIMEOUT_MS", api.DefaultImportTimeout),
		},
		limiter: &engine.UserLimiter{
			MaxCalls: int(src.Int("BLINDEXEC_MAX_CONCURRENT_PER_USER", 16, 0)),
			MaxRuns:  int(src.Int("BLINDEXEC_MAX_RUNS_PER_USER", 4, 0)),
		},
	}
}

// httpServer is serve's server on addr: header, idle and header-size
// limits here, body and write deadlines per route in the API (a server
// ReadTimeout or WriteTimeout would cut server-sent events and imports).
func (l *serveLimits) httpServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: l.header, IdleTimeout: l.idle, MaxHeaderBytes: l.maxHeaderBytes}
}
