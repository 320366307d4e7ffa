package api_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/access/accesstest"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/egress/egresstest"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestNarrowedTokenSeesItsOwn (review 68, the lead's decision): a token
// with fixed perms lists and decides only the pending items of tools its
// perms allow, reads only their execution records, and lists, reads and
// resumes only the runs it started; another's is 404 as another user's.
// Before, a token narrowed to "search" read user 7's payroll call and its
// record, and approved it. The user's token without perms, the service
// and the administrator still see everything of the user.
func TestNarrowedTokenSeesItsOwn(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		})
		llm := openaitest.New(t)
		e := newEnv(t, st, withModel(llm), func(s *api.Server) {
			checker := &access.Checker{Source: accesstest.Same("search:query", "hr:payroll:edit"), Name: "test"}
			s.Executor.Access, s.Access = checker, checker
			s.Confirm, s.Runner.Confirm = confirm.Consequential, confirm.Always
			m := enginemcp.NewManager(st, egresstest.Client(t))
			t.Cleanup(func() { m.Close() })
			s.MCP = &api.MCPConfig{Manager: m} // GET /v1/pending and POST /v1/pending/{id}
		})
		for _, doc := range []string{
			`{"name":"search","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
			  "execution":{"method":"GET","base_url":"` + up.URL + `/search"},"perms":["search:query"]}`,
			`{"name":"payroll","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
			  "execution":{"method":"POST","base_url":"` + up.URL + `/payroll"},"perms":["hr:payroll:edit"],"consequential":true}`,
		} {
			if code, out := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
				t.Fatalf("add plugin: %d %v", code, out)
			}
		}
		ctx := context.Background()
		full, _, err := api.IssueToken(ctx, st, 7, "full", 0, "")
		if err != nil {
			t.Fatal(err)
		}
		narrow, _, err := api.IssueToken(ctx, st, 7, "agent", 0, "", "search:query")
		if err != nil {
			t.Fatal(err)
		}
		other, _, err := api.IssueToken(ctx, st, 7, "another agent", 0, "", "search:query")
		if err != nil {
			t.Fatal(err)
		}
		none, _, err := api.IssueToken(ctx, st, 7, "no tool", 0, "", "crm:lead:list")
		if err != nil {
			t.Fatal(err)
		}
		e.changes.Poll(ctx)

		// The payroll call waits for a person; a search is prepared; both
		// tools are called (records).
		code, held := e.do("POST", "/v1/execute", full, map[string]any{"name": "payroll", "arguments": map[string]any{"q": "raise"}})
		if code != http.StatusConflict {
			t.Fatalf("payroll: %d %v", code, held)
		}
		payrollItem := held["error"].(map[string]any)["details"].(map[string]any)["pending"].(map[string]any)["id"].(string)
		code, prepared := e.do("POST", "/v1/execute", full, map[string]any{"name": "search", "arguments": map[string]any{"q": "x"}, "prepare": true})
		if code != http.StatusOK {
			t.Fatalf("prepare search: %d %v", code, prepared)
		}
		for _, tool := range []string{"search", "payroll"} {
			if code, out := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": tool, "user_id": 7, "arguments": map[string]any{"q": "x"}}); code != http.StatusOK {
				t.Fatalf("%s: %d %v", tool, code, out)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := e.rec.Close(rctx); err != nil {
			t.Fatal(err)
		}
		// A run of the full token and one of the narrowed token, each
		// paused on a search.
		runs := map[string]string{}
		for name, tok := range map[string]string{"full": full, "narrow": narrow} {
			llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "search", Arguments: `{"q":"y"}`}}})
			code, reply := e.do("POST", "/v1/runs", tok, map[string]any{"plugin_names": []string{"search"},
				"messages": []map[string]any{{"role": "user", "content": "search"}}})
			if code != http.StatusOK || reply["status"] != "paused" {
				t.Fatalf("run of %s: %d %v", name, code, reply)
			}
			runs[name] = reply["run_id"].(string)
		}

		listed := func(t *testing.T, tok, path, key, field string) []string {
			t.Helper()
			code, out := e.do("GET", path, tok, nil)
			if code != http.StatusOK {
				t.Fatalf("%s: %d %v", path, code, out)
			}
			var got []string
			for _, x := range out[key].([]any) {
				got = append(got, x.(map[string]any)[field].(string))
			}
			slices.Sort(got)
			return got
		}
		for _, tt := range []struct {
			name, token          string
			pending, execs, runs []string
		}{
			{"the narrowed token", narrow, []string{"search"}, []string{"search"}, []string{runs["narrow"]}},
			{"another narrowed token", other, []string{"search"}, []string{"search"}, nil},
			{"a token whose perms allow no tool", none, nil, nil, nil},
			{"the token without perms", full, []string{"payroll", "search"}, []string{"payroll", "search"}, slices.Sorted(slices.Values([]string{runs["full"], runs["narrow"]}))},
			{"the service", serviceToken, []string{"payroll", "search"}, []string{"payroll", "search"}, slices.Sorted(slices.Values([]string{runs["full"], runs["narrow"]}))},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if got := listed(t, tt.token, "/v1/pending?user_id=7", "pending", "tool"); !slices.Equal(got, tt.pending) {
					t.Errorf("GET /v1/pending: %v, want %v", got, tt.pending)
				}
				if got := slices.Compact(listed(t, tt.token, "/v1/executions?user_id=7", "executions", "plugin_name")); !slices.Equal(got, tt.execs) {
					t.Errorf("GET /v1/executions: %v, want %v", got, tt.execs)
				}
				if got := listed(t, tt.token, "/v1/runs?user_id=7", "runs", "run_id"); !slices.Equal(got, tt.runs) {
					t.Errorf("GET /v1/runs: %v, want %v", got, tt.runs)
				}
			})
		}
		if got := listed(t, narrow, "/v1/executions?plugin=payroll", "executions", "plugin_name"); len(got) != 0 {
			t.Errorf("GET /v1/executions?plugin=payroll by the narrowed token: %v", got)
		}

		// Another's item or run is 404, as another user's, and stays as it was.
		if code, out := e.do("POST", "/v1/pending/"+payrollItem, narrow, map[string]any{"decision": "approve"}); code != http.StatusNotFound || errCodeOf(out) != "pending_not_found" {
			t.Errorf("the narrowed token approving payroll: %d %v, want 404 pending_not_found", code, out)
		}
		// Review 70: nor is it answered by its id as a confirmation: a
		// search sent with the payroll item's id found the item its
		// user's and marked it stale (409 confirmation_stale), deciding
		// another tool's call.
		if code, out := e.do("POST", "/v1/execute", narrow, map[string]any{"name": "search", "arguments": map[string]any{"q": "x"},
			"confirmation": payrollItem}); code != http.StatusNotFound || errCodeOf(out) != "confirmation_not_found" {
			t.Errorf("the narrowed token sending with the payroll item's id: %d %v, want 404 confirmation_not_found", code, out)
		}
		for _, path := range []string{"/v1/runs/" + runs["full"], "/v1/runs/" + runs["narrow"]} {
			if code, out := e.do("GET", path, other, nil); code != http.StatusNotFound || errCodeOf(out) != "run_not_found" {
				t.Errorf("GET %s by another narrowed token: %d %v, want 404 run_not_found", path, code, out)
			}
		}
		code, got := e.do("GET", "/v1/runs/"+runs["full"], full, nil)
		if code != http.StatusOK {
			t.Fatalf("GET the full token's run: %d %v", code, got)
		}
		fullItem := got["pending"].([]any)[0].(map[string]any)["id"].(string)
		if code, out := e.do("POST", "/v1/runs/"+runs["full"]+"/resume", narrow,
			map[string]any{"decisions": []map[string]string{{"id": fullItem, "decision": "approve"}}}); code != http.StatusNotFound || errCodeOf(out) != "run_not_found" {
			t.Errorf("the narrowed token resuming another's run: %d %v, want 404 run_not_found", code, out)
		}
		if it, err := st.GetPendingItem(ctx, payrollItem); err != nil || it.Status != store.PendingWaiting {
			t.Errorf("the payroll item: %+v %v, want still waiting", it, err)
		}
		if _, got := e.do("GET", "/v1/runs/"+runs["full"], full, nil); got["status"] != "paused" {
			t.Errorf("the full token's run: %v, want still paused", got["status"])
		}

		// Its own: read, decided and resumed.
		code, got = e.do("GET", "/v1/runs/"+runs["narrow"], narrow, nil)
		if code != http.StatusOK {
			t.Fatalf("GET its own run: %d %v", code, got)
		}
		llm.Script(openaitest.Turn{Content: "done"})
		ownItem := got["pending"].([]any)[0].(map[string]any)["id"].(string)
		if code, out := e.do("POST", "/v1/runs/"+runs["narrow"]+"/resume", narrow,
			map[string]any{"decisions": []map[string]string{{"id": ownItem, "decision": "approve"}}}); code != http.StatusOK || out["status"] != "completed" {
			t.Errorf("resuming its own run: %d %v", code, out)
		}
		if code, out := e.do("POST", "/v1/pending/"+prepared["pending"].(map[string]any)["id"].(string), narrow, map[string]any{"decision": "deny"}); code != http.StatusOK {
			t.Errorf("denying the search item: %d %v", code, out)
		}
	})
}
