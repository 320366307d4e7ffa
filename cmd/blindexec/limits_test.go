package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

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

// Issue 30: the bounds' settings, their defaults, values and errors.
func TestBoundsSettings(t *testing.T) {
	load := func() (*config, error) {
		src := settings.FromEnv(os.LookupEnv)
		c := &config{}
		c.bind(&cobra.Command{}, src)
		return c, src.Err()
	}
	c, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if s := c.mcpSessions; s.PerUser != 32 || s.Total != 4096 || s.Idle != 10*time.Minute {
		t.Errorf("sessions %+v", s)
	}
	if c.toolSearch.MaxQueryChars != 2000 || c.llmMaxResponse != 4<<20 || c.llmMaxToolCalls != 32 || len(c.trustedProxies) != 0 {
		t.Errorf("defaults: query %d, response %d, tool calls %d, proxies %v", c.toolSearch.MaxQueryChars, c.llmMaxResponse, c.llmMaxToolCalls, c.trustedProxies)
	}
	for k, v := range map[string]string{"BLINDEXEC_MCP_MAX_SESSIONS_PER_USER": "2", "BLINDEXEC_MCP_MAX_SESSIONS": "9", "BLINDEXEC_MCP_SESSION_IDLE_MS": "1500",
		"BLINDEXEC_MAX_QUERY_CHARS": "80", "BLINDEXEC_LLM_MAX_RESPONSE_BYTES": "1000", "BLINDEXEC_LLM_MAX_TOOL_CALLS": "3", "BLINDEXEC_TRUSTED_PROXIES": "10.0.0.1, 192.168.0.0/16"} {
		t.Setenv(k, v)
	}
	if c, err = load(); err != nil {
		t.Fatal(err)
	}
	if s := c.mcpSessions; s.PerUser != 2 || s.Total != 9 || s.Idle != 1500*time.Millisecond || c.toolSearch.MaxQueryChars != 80 ||
		c.llmMaxResponse != 1000 || c.llmMaxToolCalls != 3 || len(c.trustedProxies) != 2 {
		t.Errorf("settings not applied: %+v %+v", s, c)
	}
	for k, v := range map[string]string{"BLINDEXEC_MCP_MAX_SESSIONS_PER_USER": "0", "BLINDEXEC_MAX_QUERY_CHARS": "many", "BLINDEXEC_TRUSTED_PROXIES": "10.0.0.1,proxy.local"} {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			if _, err := load(); err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%s=%q: %v", k, v, err)
			}
		})
	}
}
