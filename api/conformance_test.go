package api_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/mcpconformance"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// tokenProxy serves target with token added: the suite cannot send one,
// and no setting turns /mcp's authentication off.
func tokenProxy(t *testing.T, target, token string) string {
	u, _ := url.Parse(target)
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+token)
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestConformance runs the official MCP conformance suite's server
// scenarios against /mcp, through a proxy that adds a per-user token;
// the scenarios it offers and does not run are mcpconformance.Fixtures.
func TestConformance(t *testing.T) {
	suite := mcpconformance.Require(t)
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), func(s *api.Server) { s.MCP = &api.MCPConfig{} })
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok":true}`)) })
	plugin := map[string]any{"name": "get_repo", "description": "Read a repository",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}},
		"execution":  map[string]any{"method": "GET", "base_url": up.URL + "/repo"}}
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "conformance"})
	endpoint := tokenProxy(t, e.url, tok["token"].(string)) + "/mcp"
	run := []string{"server-initialize", "ping", "tools-list", "dns-rebinding-protection", "logging-set-level", "server-sse-multiple-streams", "resources-list", "prompts-list"}
	for _, sc := range run {
		t.Run(sc, func(t *testing.T) { suite.Run(t, endpoint, sc) })
	}
	mcpconformance.Check(t, suite.Scenarios(t), run, mcpconformance.Fixtures)
}
