package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPOrigins: every MCP endpoint refuses a browser Origin that is
// neither BLINDEXEC_BROWSER_URL's nor listed (403 origin_not_allowed,
// before authentication and before any MCP is spoken), "null" included,
// and serves one that is, a page of the engine's own machine calling it
// on loopback, and a request without Origin, as before (issue 48 point 6).
func TestMCPOrigins(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), func(s *api.Server) {
		s.MCP = &api.MCPConfig{}
		s.MCPOrigins = []string{"https://ai.example.com", "http://localhost:6274"}
		// /mcp/openapi's own handler is not what is tested: the guard in
		// front of it is, so any MCP answer does.
		s.OpenAPITools = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
		})
	})
	_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "origin"})
	token := tok["token"].(string)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, path := range []string{"/mcp", "/mcp/openapi", "/mcp/agents/helpdesk"} {
		for _, tt := range []struct {
			origin, token string
			refused       bool
		}{
			{"", token, false},
			{"https://ai.example.com", token, false},
			{"HTTPS://AI.example.com:443", token, false}, // the same origin, written otherwise
			{"http://localhost:6274", token, false},
			{"http://evil.example.com", token, true},
			{"https://ai.example.com:8443", token, true},
			{"http://ai.example.com", token, true},
			{"null", token, true},
			{"http://localhost:6000", token, false}, // a page of this machine, calling it on loopback
			{"http://127.0.0.1:6000", token, false},
			{"http://evil.example.com", "", true}, // refused before authentication
		} {
			t.Run(path+" "+tt.origin, func(t *testing.T) {
				req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(init))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if tt.token != "" {
					req.Header.Set("Authorization", "Bearer "+tt.token)
				}
				if tt.origin != "" {
					req.Header.Set("Origin", tt.origin)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var body map[string]any
				json.NewDecoder(resp.Body).Decode(&body)
				if !tt.refused {
					// The agent does not exist in this engine: what answers
					// is the route behind the guard (503: no access rule).
					if resp.StatusCode == http.StatusForbidden || resp.StatusCode >= 500 && path != "/mcp/agents/helpdesk" {
						t.Fatalf("served origin: %d %v", resp.StatusCode, body)
					}
					return
				}
				if resp.StatusCode != http.StatusForbidden || errCode(body) != "origin_not_allowed" {
					t.Fatalf("want 403 origin_not_allowed, got %d %v", resp.StatusCode, body)
				}
				if msg := errMessage(body); !strings.Contains(msg, "BLINDEXEC_ALLOWED_ORIGINS") {
					t.Errorf("the refusal must say what to configure: %q", msg)
				}
			})
		}
	}
}
