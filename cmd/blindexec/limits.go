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
		header:         setHeaderTimeout.Get(src),
		idle:           setIdleTimeout.Get(src),
		maxHeaderBytes: int(setMaxHeaderBytes.Get(src)),
		deadlines: api.Deadlines{
			Body:   setBodyTimeout.Get(src),
			Write:  setWriteTimeout.Get(src),
			Import: setImportTimeout.Get(src),
		},
		limiter: &engine.UserLimiter{
			MaxCalls: int(setMaxCallsPerUser.Get(src)),
			MaxRuns:  int(setMaxRunsPerUser.Get(src)),
		},
	}
}

// httpServer is serve's server on addr: header, idle and header-size
// limits here, body and write deadlines per route in the API (a server
// ReadTimeout or WriteTimeout would cut server-sent events and imports).
func (l *serveLimits) httpServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: l.header, IdleTimeout: l.idle, MaxHeaderBytes: l.maxHeaderBytes}
}
