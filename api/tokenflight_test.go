package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/access/accesstest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestUpstreamQuestionFollowsItsToken (review 73): a /v1/execute whose
// upstream asks the person a question waits on the approval page; the
// token that made the call narrowed meanwhile so that it no longer
// allows the tool, the person's answer (by the user's other token) does
// not reach the upstream. Before, the call was narrowed for its whole
// course by the perms of its request, and the answer went upstream.
func TestUpstreamQuestionFollowsItsToken(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		var srv *Server
		e := askingEnv(t, st, func(s *Server) {
			checker := &access.Checker{Source: accesstest.Same("med:ask"), Name: "test"}
			s.Executor.Access, s.Access, srv = checker, checker, s
		})
		ctx := t.Context()
		poll := func(counter, query string, args ...any) {
			t.Helper()
			if _, err := st.DB().ExecContext(ctx, query, args...); err != nil {
				t.Fatal(err)
			}
			if err := st.BumpCounters(ctx, counter); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Changes.Poll(ctx); err != nil {
				t.Fatal(err)
			}
		}
		poll("plugin", "UPDATE sys_ai_plugin SET perms = 'med:ask' WHERE name = 'ask_person'")
		agent, row, err := IssueToken(ctx, st, 7, "agent", 0, "", "med:ask")
		if err != nil {
			t.Fatal(err)
		}
		poll("token", "UPDATE sys_ai_token SET perms = perms WHERE token_id = ?", row.ID)
		done := make(chan map[string]any, 1)
		go func() {
			_, out := DoJSON(t, e.url, "POST", "/v1/execute", agent, map[string]any{"name": "ask_person", "arguments": map[string]any{}})
			done <- out
		}()
		q := waitQuestion(t, e)
		poll("token", "UPDATE sys_ai_token SET perms = 'other:perm' WHERE token_id = ?", row.ID)
		if code, out := e.do("POST", "/v1/pending/"+q["id"].(string), e.userTok, map[string]any{"action": "accept", "content": map[string]any{"size": "L"}}); code != 200 {
			t.Fatalf("the answer: %d %v", code, out)
		}
		out := <-done
		text := fmt.Sprint(out)
		if strings.Contains(text, `answered {"action":"accept"`) || !strings.Contains(text, "permission_denied") && !strings.Contains(text, "elicitation not answered") {
			t.Errorf("/v1/execute = %s: the answer reached the upstream after the token was narrowed", text)
		}
	})
}
