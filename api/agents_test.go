package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestAgentRoutes: the administrator creates, replaces and deletes
// agents; the service reads them with the tools their selection picks
// now; bad documents are refused naming the field; an unknown agent is
// 404 agent_not_found (issue 46 point 3).
func TestAgentRoutes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		for _, p := range []map[string]any{
			{"name": "list_leave", "tags": []string{"hr"}},
			{"name": "approve_leave", "tags": []string{"hr"}, "status": "1"},
			{"name": "weather"},
		} {
			p["description"], p["parameters"] = "d", map[string]any{"type": "object"}
			p["execution"] = map[string]any{"method": "GET", "base_url": "https://api.example.com/x"}
			if code, res := e.do("POST", "/v1/plugins", adminToken, p); code != http.StatusCreated {
				t.Fatalf("create %s: %d %v", p["name"], code, res)
			}
		}
		hr := map[string]any{"name": "hr", "description": "Leave requests", "tools": map[string]any{"tags": []string{"hr"}, "names": []string{"weather"}},
			"perms": []string{"hr:leave:list"}}
		code, res := e.do("POST", "/v1/agents", adminToken, hr)
		if code != http.StatusCreated || res["status"] != "0" || res["create_by"] != "admin" || fmt.Sprint(res["tool_names"]) != "[list_leave weather]" {
			t.Fatalf("create: %d %v, want status 0 and the enabled tools list_leave, weather", code, res)
		}
		if code, res := e.do("POST", "/v1/agents", adminToken, hr); code != http.StatusConflict {
			t.Errorf("create twice: %d %v, want 409", code, res)
		}
		if code, _ := e.do("POST", "/v1/agents", serviceToken, hr); code != http.StatusForbidden {
			t.Errorf("the service token created an agent: %d, want 403", code)
		}
		code, res = e.do("GET", "/v1/agents/hr", serviceToken, nil)
		if code != http.StatusOK || res["description"] != "Leave requests" || fmt.Sprint(res["perms"]) != "[hr:leave:list]" {
			t.Errorf("get: %d %v", code, res)
		}
		// A plugin enabled later is one of the agent's tools at once.
		if code, res := e.do("PATCH", "/v1/plugins/approve_leave", adminToken, map[string]any{"status": "0"}); code != http.StatusOK {
			t.Fatalf("enable: %d %v", code, res)
		}
		if _, res := e.do("GET", "/v1/agents/hr", serviceToken, nil); fmt.Sprint(res["tool_names"]) != "[approve_leave list_leave weather]" {
			t.Errorf("after enabling approve_leave: %v", res["tool_names"])
		}
		hr["status"], hr["tools"] = "1", map[string]any{"names": []string{"weather"}}
		delete(hr, "perms")
		code, res = e.do("PUT", "/v1/agents/hr", adminToken, hr)
		if code != http.StatusOK || res["status"] != "1" || res["perms"] != nil || fmt.Sprint(res["tool_names"]) != "[weather]" {
			t.Errorf("put: %d %v", code, res)
		}
		code, res = e.do("GET", "/v1/agents", serviceToken, nil)
		if agents, _ := res["agents"].([]any); code != http.StatusOK || len(agents) != 1 {
			t.Errorf("list: %d %v", code, res)
		}
		for _, tt := range []struct {
			method, path string
			body         map[string]any
			status       int
			says         string
		}{
			{"POST", "/v1/agents", map[string]any{"name": "a b", "tools": map[string]any{"tags": []string{"x"}}}, 400, "name"},
			{"POST", "/v1/agents", map[string]any{"name": "empty"}, 400, "tools: select tools"},
			{"POST", "/v1/agents", map[string]any{"name": "wild", "tools": map[string]any{"tags": []string{"x"}}, "perms": []string{"hr:*"}}, 400, "perms[0]"},
			{"POST", "/v1/agents", map[string]any{"name": "st", "tools": map[string]any{"tags": []string{"x"}}, "status": "2"}, 400, "status"},
			{"POST", "/v1/agents", map[string]any{"name": "typo", "tool": map[string]any{"tags": []string{"x"}}}, 400, "unknown_field"},
			{"PUT", "/v1/agents/hr", map[string]any{"name": "other", "tools": map[string]any{"tags": []string{"x"}}}, 400, "does not match"},
			{"PUT", "/v1/agents/nobody", map[string]any{"name": "nobody", "tools": map[string]any{"tags": []string{"x"}}}, 404, "agent_not_found"},
			{"GET", "/v1/agents/nobody", nil, 404, "agent_not_found"},
			{"DELETE", "/v1/agents/hr", nil, 204, ""},
			{"DELETE", "/v1/agents/hr", nil, 404, "agent_not_found"},
		} {
			code, res := e.do(tt.method, tt.path, adminToken, tt.body)
			if code != tt.status || !strings.Contains(fmt.Sprint(res), tt.says) {
				t.Errorf("%s %s %v: %d %v, want %d saying %q", tt.method, tt.path, tt.body, code, res, tt.status, tt.says)
			}
		}
		if vs, err := st.Versions(t.Context()); err != nil || vs.Agents != 3 {
			t.Errorf("the agents' counter: %+v %v, want 3: moved by each of the create, the replace and the delete", vs, err)
		}
	})
}
