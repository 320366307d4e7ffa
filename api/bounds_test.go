package api

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// Issue 30, point 2: a search query is refused past its limit, named,
// before any search; /mcp takes the bodies the other JSON routes take.
func TestUntrustedTextBounds(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	long := url.QueryEscape(strings.Repeat("issues ", 300)) // 2,100 characters
	for _, path := range []string{"/v1/tools/search?q=" + long, "/v1/tools?q=" + long, "/v1/tools?format=dynamic&q=" + long} {
		code, out := e.do("GET", path, mcpService, nil)
		d, _ := out["error"].(map[string]any)["details"].(map[string]any)
		if code != 400 || errCode(out) != codeQueryTooLong || !strings.Contains(errMessage(out), "limit of 2000 characters (BLINDEXEC_MAX_QUERY_CHARS)") || d["max"] != 2000.0 {
			t.Errorf("%s: %d %v", path[:20], code, out)
		}
	}
	if code, out := e.do("GET", "/v1/tools/search?q="+url.QueryEscape(strings.Repeat("é", 2000)), mcpService, nil); code != 200 {
		t.Errorf("2,000 characters of 2 bytes: %d %v", code, out)
	}

	// Every other free text has its limit.
	longURL := "https://x.example/" + strings.Repeat("u", 1100)
	if code, out := e.do("POST", "/v1/plugins/import/openapi", mcpAdmin, map[string]any{"url": longURL}); code != 400 || !strings.Contains(errMessage(out), "over the limit of 1024") {
		t.Errorf("an import URL of 1,118 bytes: %d %v", code, out)
	}
	if code, out := e.do("POST", "/v1/mcp/servers", mcpAdmin, map[string]any{"name": "long", "url": longURL}); code != 400 || !strings.Contains(errMessage(out)+fmt.Sprint(out), "over the limit of 1024") {
		t.Errorf("an MCP server URL of 1,118 bytes: %d %v", code, out)
	}
	if code, out := e.do("POST", "/v1/tokens", mcpAdmin, map[string]any{"user_id": 7, "name": strings.Repeat("n", 129)}); code != 400 || !strings.Contains(errMessage(out), "name: 129 characters, over the limit of 128") {
		t.Errorf("a token name of 129 characters: %d %v", code, out)
	}
	if code, out := e.do("POST", "/v1/plugins", mcpAdmin, map[string]any{"name": "long", "description": strings.Repeat("d", 16_001),
		"parameters": map[string]any{"type": "object"}, "execution": map[string]any{"method": "GET", "base_url": "https://x.example/"}}); code != 400 || !strings.Contains(fmt.Sprint(out), "description: maxLength: got 16,001, want 16,000") {
		t.Errorf("a description of 16,001 characters: %d %v", code, out)
	}

	// An initialize of 5 MiB: over the MCP SDK's default of 4 MiB, within
	// docs/security.md's 8 MiB.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` +
		strings.Repeat("x", 5<<20) + `","version":"1"}}}`
	code, out := e.do("POST", "/mcp", mcpService, init, "X-User-Id", "7", "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if code != 200 || out["result"] == nil {
		t.Errorf("a 5 MiB body to /mcp: %d %v", code, out)
	}
}

// Issue 30, point 1: serve's /metrics shows the live /mcp sessions, held
// to the per-user cap.
func TestMCPSessionsOnMetrics(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	reg := prometheus.NewRegistry()
	m := enginemcp.NewManager(st, egresstest.Client(t))
	t.Cleanup(func() { m.Close() })
	s := &Server{Store: st, Executor: engine.NewExecutor(egresstest.Client(t)), AdminToken: mcpAdmin, ServiceToken: mcpService,
		Logger: slog.New(slog.DiscardHandler), Registry: reg, MCP: &MCPConfig{Manager: m, Sessions: mcpserver.SessionLimits{PerUser: 2}}}
	hs := httptest.NewServer(CheckedHandler(t, s.Handler()))
	t.Cleanup(hs.Close)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for range 5 {
		if code, out := DoJSON(t, hs.URL, "POST", "/mcp", mcpService, init, "X-User-Id", "7", "Content-Type", "application/json", "Accept", "application/json, text/event-stream"); code != 200 {
			t.Fatalf("initialize: %d %v", code, out)
		}
	}
	req, _ := http.NewRequest("GET", hs.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+mcpAdmin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"\nblindexec_mcp_sessions 2\n", `blindexec_mcp_sessions_ended_total{limit="per_user"} 3`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
