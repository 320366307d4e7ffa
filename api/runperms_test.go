package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/access/accesstest"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestResumedRunFollowsItsToken: a paused run started by a token with
// fixed perms goes on with that token's perms as they are when it is
// resumed, on any replica: perms narrowed, or the token revoked, on
// replica A, the run resumed on replica B sends nothing the token may no
// longer do (the perms stored with the pause were the run's for ever).
func TestResumedRunFollowsItsToken(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		})
		llm := openaitest.New(t)
		replica := func(s *api.Server) {
			checker := &access.Checker{Source: accesstest.Same("search:query", "hr:payroll:edit"), Name: "test"}
			s.Executor.Access, s.Access = checker, checker
			s.Confirm, s.Runner.Confirm = confirm.Consequential, confirm.Consequential
		}
		a, b := newEnv(t, st, withModel(llm), replica), newEnv(t, st, withModel(llm), replica)
		for _, doc := range []string{
			`{"name":"search","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
			  "execution":{"method":"POST","base_url":"` + up.URL + `/search"},"perms":["search:query"],"consequential":true}`,
			`{"name":"payroll","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
			  "execution":{"method":"GET","base_url":"` + up.URL + `/payroll"},"perms":["hr:payroll:edit"],"consequential":false}`,
		} {
			if code, out := a.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
				t.Fatalf("add plugin: %d %v", code, out)
			}
		}
		ctx := context.Background()
		full, _, err := api.IssueToken(ctx, st, 7, "full", 0, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			change string // what replica A's administrator does to the run's token
			resume func(agent string) string
		}{
			{"perms narrowed, resumed by the token", "UPDATE sys_ai_token SET perms = 'search:query' WHERE token_id = ?", func(agent string) string { return agent }},
			{"token revoked, resumed by the user's other token", "DELETE FROM sys_ai_token WHERE token_id = ?", func(string) string { return full }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				agent, row, err := api.IssueToken(ctx, st, 7, "agent "+tc.name, 0, "", "search:query", "hr:payroll:edit")
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range []*env{a, b} {
					e.changes.Poll(ctx)
				}
				llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "search", Arguments: `{"q":"y"}`}}})
				code, reply := a.do("POST", "/v1/runs", agent, map[string]any{"plugin_names": []string{"search", "payroll"},
					"messages": []map[string]any{{"role": "user", "content": "search, then payroll"}}})
				if code != http.StatusOK || reply["status"] != "paused" {
					t.Fatalf("run: %d %v", code, reply)
				}
				item := reply["pending"].([]any)[0].(map[string]any)["id"].(string)
				if _, err := st.DB().Exec(tc.change, row.ID); err != nil {
					t.Fatal(err)
				}
				for _, e := range []*env{a, b} {
					e.changes.Poll(ctx)
				}
				before := len(up.received())
				llm.Script(
					openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "payroll", Arguments: `{"q":"raise"}`}}},
					openaitest.Turn{Content: "done"},
				)
				code, done := b.do("POST", "/v1/runs/"+reply["run_id"].(string)+"/resume", tc.resume(agent),
					map[string]any{"decisions": []map[string]string{{"id": item, "decision": "approve"}}})
				if code != http.StatusOK {
					t.Fatalf("resume: %d %v", code, done)
				}
				for _, r := range up.received()[before:] {
					if strings.HasPrefix(r.uri, "/payroll") {
						t.Errorf("the resumed run sent %s %s: its token may no longer use payroll", r.method, r.uri)
					}
				}
			})
		}
	})
}
