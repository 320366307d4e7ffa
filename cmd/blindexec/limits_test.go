package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/settings"
)

// Issue 13, points 3 and 6: serve's limits, their defaults and their
// settings.
func TestServeLimits(t *testing.T) {
	load := func() (*serveLimits, error) {
		src := settings.FromEnv(os.LookupEnv)
		l := loadServeLimits(src)
		return l, src.Err()
	}
	l, err := load()
	if err != nil {
		t.Fatal(err)
	}
	hs := l.httpServer(":0", nil)
	if hs.ReadHeaderTimeout != 10*time.Second || hs.IdleTimeout != 2*time.Minute || hs.MaxHeaderBytes != 64<<10 ||
		hs.ReadTimeout != 0 || hs.WriteTimeout != 0 {
		t.Errorf("server %+v", hs)
	}
	if d := l.deadlines; d.Body != 30*time.Second || d.Write != 2*time.Minute || d.Import != 10*time.Minute {
		t.Errorf("deadlines %+v", d)
	}
	if l.limiter.MaxCalls != 16 || l.limiter.MaxRuns != 4 {
		t.Errorf("limiter %+v", l.limiter)
	}

	t.Setenv("BLINDEXEC_BODY_TIMEOUT_MS", "500")
	t.Setenv("BLINDEXEC_MAX_HEADER_BYTES", "1024")
	t.Setenv("BLINDEXEC_MAX_CONCURRENT_PER_USER", "0")
	if l, err = load(); err != nil {
		t.Fatal(err)
	}
	if l.deadlines.Body != 500*time.Millisecond || l.httpServer("", nil).MaxHeaderBytes != 1024 || l.limiter.MaxCalls != 0 {
		t.Errorf("settings not applied: %+v %+v", l.deadlines, l.limiter)
	}
	t.Setenv("BLINDEXEC_MAX_RUNS_PER_USER", "four")
	if _, err := load(); err == nil || !strings.Contains(err.Error(), "BLINDEXEC_MAX_RUNS_PER_USER") {
		t.Errorf("a bad setting: %v", err)
	}
}
