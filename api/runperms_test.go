package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
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
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// narrowedReplicas are two replicas on st, each deciding with the same
// grants (search:query, hr:payroll:edit for every user), and their two
// catalog tools on up: search, consequential, and payroll, not.
func narrowedReplicas(t *testing.T, st *store.Store, llm *openaitest.Server, during ...func(r *http.Request)) (a, b *env, up *upstream) {
	t.Helper()
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		for _, f := range during {
			f(r) // while the call is in flight
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	replica := func(s *api.Server) {
		checker := &access.Checker{Source: accesstest.Same("search:query", "hr:payroll:edit"), Name: "test"}
		s.Executor.Access, s.Access = checker, checker
		s.Confirm, s.Runner.Confirm = confirm.Consequential, confirm.Consequential
		s.Runner.MaxConcurrency = 1 // a turn's calls one after another: a change during one is the next's
		m := enginemcp.NewManager(st, egresstest.Client(t))
		t.Cleanup(func() { m.Close() })
		s.MCP = &api.MCPConfig{Manager: m}
	}
	a, b = newEnv(t, st, withModel(llm), replica), newEnv(t, st, withModel(llm), replica)
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
	return a, b, up
}

// noPayroll fails t if up received a payroll call since the first
// before requests.
func noPayroll(t *testing.T, up *upstream, before int) {
	t.Helper()
	for _, r := range up.received()[before:] {
		if strings.HasPrefix(r.uri, "/payroll") {
			t.Errorf("sent %s %s: the token may no longer use payroll", r.method, r.uri)
		}
	}
}

// narrowToSearch is replica A's administrator narrowing token id to
// search:query (as RuoYi's SQL would: the counter moved as MySQL's
// trigger moves it, SQLite having none), both replicas polling after.
func narrowToSearch(t *testing.T, st *store.Store, id int64, replicas ...*env) {
	t.Helper()
	narrowTo(t, st, id, "search:query", replicas...)
}

// narrowTo is narrowToSearch to perms.
func narrowTo(t *testing.T, st *store.Store, id int64, perms string, replicas ...*env) {
	t.Helper()
	if _, err := st.DB().Exec("UPDATE sys_ai_token SET perms = ? WHERE token_id = ?", perms, id); err != nil {
		t.Fatal(err)
	}
	if err := st.BumpCounters(t.Context(), "token"); err != nil {
		t.Fatal(err)
	}
	for _, e := range replicas {
		if _, err := e.changes.Poll(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResumedRunFollowsItsToken (review 72): a paused run started by a
// token with fixed perms goes on with that token's perms as they are when
// it is resumed, on any replica. Before, the perms stored with the pause
// were the run's for ever: narrowed, or the token revoked, on replica A,
// the run resumed on replica B sent payroll.
func TestResumedRunFollowsItsToken(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		llm := openaitest.New(t)
		a, b, up := narrowedReplicas(t, st, llm)
		ctx := context.Background()
		full, _, err := api.IssueToken(ctx, st, 7, "full", 0, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			change func(t *testing.T, id int64)
			resume func(agent string) string
		}{
			{"perms narrowed, resumed by the token", func(t *testing.T, id int64) { narrowToSearch(t, st, id, a, b) },
				func(agent string) string { return agent }},
			{"token revoked, resumed by the user's other token", func(t *testing.T, id int64) {
				if code, _ := a.do("DELETE", fmt.Sprintf("/v1/tokens/%d", id), adminToken, nil); code != http.StatusNoContent {
					t.Fatal(code)
				}
				b.changes.Poll(ctx)
			}, func(string) string { return full }},
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
				tc.change(t, row.ID)
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
				noPayroll(t, up, before)
			})
		}
	})
}

// TestMCPSessionFollowsItsToken (review 72): a 2025-11-25 session on
// replica B, opened by a token with fixed perms, acts with the token's
// perms as they are: narrowed on replica A, the session's next call of a
// tool they no longer allow is refused, nothing sent. Before, the session
// kept the perms it was opened with for its life and sent payroll.
func TestMCPSessionFollowsItsToken(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		a, b, up := narrowedReplicas(t, st, openaitest.New(t))
		agent, row, err := api.IssueToken(t.Context(), st, 7, "agent", 0, "", "search:query", "hr:payroll:edit")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []*env{a, b} {
			e.changes.Poll(t.Context())
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: b.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(agent)}},
			&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		call := func() (*sdk.CallToolResult, error) {
			return cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "payroll", Arguments: map[string]any{"q": "raise"}})
		}
		if res, err := call(); err != nil || res.IsError {
			t.Fatalf("payroll before the change: %v %+v", err, res)
		}
		narrowToSearch(t, st, row.ID, a, b)
		before := len(up.received())
		res, err := call()
		if err == nil && !res.IsError {
			t.Errorf("payroll after the token was narrowed to search: %+v, want refused", res.Content)
		}
		noPayroll(t, up, before)
	})
}

// TestMRTRRetryFollowsTheCatalog (review 72, held): a 2026-07-28 client's
// approval is retried on the other replica after the tool was disabled,
// or its row's execution changed, on the first: the retry's tool is the
// catalog's as it now is (a disabled one unknown), its request prepared
// again and held to the digest the requestState binds, and nothing is
// sent.
func TestMRTRRetryFollowsTheCatalog(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up, a, b := sealingReplicas(t, st)
		_, tok := a.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "t"})
		for i, change := range []string{
			"UPDATE sys_ai_plugin SET status = '1' WHERE name = ?",
			"UPDATE sys_ai_plugin SET execution_config = REPLACE(execution_config, '/repo', '/elsewhere') WHERE name = ?",
		} {
			name := fmt.Sprintf("delete_repo_%d", i)
			if code, body := a.do("POST", "/v1/plugins", adminToken, map[string]any{"name": name, "description": "Delete a repository",
				"execution":  map[string]any{"method": "DELETE", "base_url": up.URL + "/repo"},
				"parameters": map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}}}); code != http.StatusCreated {
				t.Fatalf("create: %d %v", code, body)
			}
			for _, e := range []*env{a, b} {
				e.changes.Poll(t.Context())
			}
			rr, lb := newRoundRobin(t, a.url, b.url)
			asked := 0
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
				ElicitationHandler: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					// While the person reads: the row changed through A.
					asked++
					if _, err := st.DB().ExecContext(ctx, change, name); err != nil {
						return nil, err
					}
					if err := st.BumpCounters(ctx, "plugin"); err != nil {
						return nil, err
					}
					for _, e := range []*env{a, b} {
						e.changes.Poll(ctx)
					}
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
				}}).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: lb + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(tok["token"].(string))}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{"repo": "x"}})
			cs.Close()
			if err == nil && !res.IsError {
				t.Errorf("%s: the retry after %q was sent: %+v", name, change, res.Content)
			}
			if n := up.count(http.MethodDelete); n != 0 {
				t.Errorf("%s: %d sent after %q", name, n, change)
			}
			first, retry := -1, -1
			for _, s := range rr.log() {
				if s.method == "tools/call" && s.state {
					retry = s.replica
				} else if s.method == "tools/call" {
					first = s.replica
				}
			}
			if asked != 1 || first < 0 || retry < 0 || first == retry {
				t.Errorf("%s: asked %d times, the call on replica %d, its retry on %d; want once, two replicas (%v)", name, asked, first, retry, err)
			}
		}
	})
}

// TestRunFollowsItsToken (review 73): a run that has not paused decides
// each call with its token's perms as they are at the call: the token
// narrowed on replica A, or revoked, while the run goes on on replica B,
// the model's next payroll call (of the same turn: the next turn no
// longer offers payroll, TestRunOffersItsTokensTools) is refused, nothing
// sent. Before, a run was narrowed for its whole course (up to 10
// minutes) by the perms its token had when it started, and sent payroll
// again.
func TestRunFollowsItsToken(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, st *store.Store, a, b *env, id int64)
	}{
		{"narrowed", func(t *testing.T, st *store.Store, a, b *env, id int64) { narrowToSearch(t, st, id, a, b) }},
		{"revoked", func(t *testing.T, st *store.Store, a, b *env, id int64) {
			if code, _ := a.do("DELETE", fmt.Sprintf("/v1/tokens/%d", id), adminToken, nil); code != http.StatusNoContent {
				t.Error(code)
			}
			b.changes.Poll(t.Context())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, st *store.Store) {
				llm := openaitest.New(t)
				var change func()
				a, b, up := narrowedReplicas(t, st, llm, func(*http.Request) {
					if change != nil {
						change() // the first payroll call sent: the token changes on A
						change = nil
					}
				})
				agent, row, err := api.IssueToken(t.Context(), st, 7, "agent", 0, "", "search:query", "hr:payroll:edit")
				if err != nil {
					t.Fatal(err)
				}
				b.changes.Poll(t.Context())
				change = func() { tc.change(t, st, a, b, row.ID) }
				payroll := openaitest.ToolCall{Name: "payroll", Arguments: `{"q":"raise"}`}
				second := payroll
				second.ID = "call_2"
				llm.Script(
					openaitest.Turn{ToolCalls: []openaitest.ToolCall{payroll, second}},
					openaitest.Turn{Content: "done"},
				)
				code, reply := b.do("POST", "/v1/runs", agent, map[string]any{"plugin_names": []string{"search", "payroll"},
					"messages": []map[string]any{{"role": "user", "content": "payroll twice"}}})
				if code != http.StatusOK {
					t.Fatalf("run: %d %v", code, reply)
				}
				steps, _ := reply["steps"].([]any)
				if len(steps) != 2 || steps[0].(map[string]any)["status"] != "ok" || steps[1].(map[string]any)["status"] != "refused" {
					t.Errorf("steps: %v, want the first payroll sent and the second refused", steps)
				}
				if n := len(up.received()); n != 1 {
					t.Errorf("the upstream received %d calls, want 1", n)
				}
			})
		})
	}
}

// TestMCPElicitationEndsWithItsSession (review 73, left): a 2025-11-25
// session's consequential call asks the person by form elicitation; while
// the person reads, the session's token is narrowed or revoked, which ends
// the session (review 72), so the answer's POST is refused. The call ends
// at once with an error on its own response, nothing is sent, and its
// record says why. Before, nothing was sent but the call was never
// answered: its client waited until the elicitation's 5 minutes.
func TestMCPElicitationEndsWithItsSession(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, st *store.Store, b *env, id int64)
	}{
		{"narrowed", func(t *testing.T, st *store.Store, b *env, id int64) { narrowTo(t, st, id, "hr:payroll:edit", b) }},
		{"revoked", func(t *testing.T, st *store.Store, b *env, id int64) {
			if code, _ := b.do("DELETE", fmt.Sprintf("/v1/tokens/%d", id), adminToken, nil); code != http.StatusNoContent {
				t.Error(code)
			}
			b.changes.Poll(t.Context())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, st *store.Store) {
				_, b, up := narrowedReplicas(t, st, openaitest.New(t))
				agent, row, err := api.IssueToken(t.Context(), st, 7, "agent", 0, "", "search:query", "hr:payroll:edit")
				if err != nil {
					t.Fatal(err)
				}
				b.changes.Poll(t.Context())
				asked, returned := make(chan struct{}, 1), make(chan struct{})
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
					ElicitationHandler: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						asked <- struct{}{}
						tc.change(t, st, b, row.ID) // while the person reads
						// The person answers once the call returned: the
						// answer's POST refused fails the go-sdk client's
						// connection, its calls still waiting with it.
						select {
						case <-returned:
						case <-time.After(20 * time.Second):
						}
						return &sdk.ElicitResult{Action: "accept"}, nil
					}}).Connect(t.Context(),
					&sdk.StreamableClientTransport{Endpoint: b.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(agent)}},
					&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				start := time.Now()
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"q": "x"}})
				close(returned)
				if ctx.Err() != nil {
					t.Fatalf("the call was not answered in %v", time.Since(start))
				}
				if len(asked) == 0 {
					t.Fatal("the person was not asked")
				}
				// The tool error saying the session ended; or, when the
				// go-sdk client saw its session gone first (its GET stream
				// ended), its own error: either way at once.
				if err == nil && (!res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "session ended")) {
					t.Errorf("the call after its session ended: %+v, want an error saying the session ended", res)
				}
				if n := len(up.received()); n != 0 {
					t.Errorf("the upstream received %d calls, want none", n)
				}
				var status, reason string
				if err := st.DB().QueryRow("SELECT status, reason FROM sys_ai_run_pending WHERE tool = 'search'").Scan(&status, &reason); err != nil {
					t.Fatal(err)
				}
				if status != "cancelled" || !strings.Contains(reason, "session ended") || !strings.Contains(reason, "token") {
					t.Errorf("the call's record: %s %q, want cancelled, its session ended as its token changed", status, reason)
				}
			})
		})
	}
}

// TestRunOffersItsTokensTools: each model call of a run offers the tools
// its token's perms allow then. The token narrowed (to payroll), widened
// (to search and payroll) or revoked on replica A during the run's
// payroll call on replica B, the model's next call is offered payroll
// alone, both, or nothing. Before, every model call of the run was
// offered the tools of its start: a narrowed token was shown search, a
// tool it would be refused, and a widened one was not shown it.
func TestRunOffersItsTokensTools(t *testing.T) {
	both := []string{"search:query", "hr:payroll:edit"}
	for _, tc := range []struct {
		name        string
		perms       []string
		change      func(t *testing.T, st *store.Store, a, b *env, id int64)
		first, next []string
	}{
		{"narrowed", both, func(t *testing.T, st *store.Store, a, b *env, id int64) { narrowTo(t, st, id, "hr:payroll:edit", a, b) },
			[]string{"payroll", "search"}, []string{"payroll"}},
		{"widened", []string{"hr:payroll:edit"}, func(t *testing.T, st *store.Store, a, b *env, id int64) {
			narrowTo(t, st, id, strings.Join(both, ","), a, b)
		}, []string{"payroll"}, []string{"payroll", "search"}},
		{"revoked", both, func(t *testing.T, st *store.Store, a, b *env, id int64) {
			if code, _ := a.do("DELETE", fmt.Sprintf("/v1/tokens/%d", id), adminToken, nil); code != http.StatusNoContent {
				t.Error(code)
			}
			b.changes.Poll(t.Context())
		}, []string{"payroll", "search"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, st *store.Store) {
				llm := openaitest.New(t)
				var change func()
				a, b, _ := narrowedReplicas(t, st, llm, func(*http.Request) {
					if change != nil {
						change() // the payroll call sent: the token changes on A
						change = nil
					}
				})
				agent, row, err := api.IssueToken(t.Context(), st, 7, "agent", 0, "", tc.perms...)
				if err != nil {
					t.Fatal(err)
				}
				b.changes.Poll(t.Context())
				change = func() { tc.change(t, st, a, b, row.ID) }
				llm.Script(
					openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "payroll", Arguments: `{"q":"raise"}`}}},
					openaitest.Turn{Content: "done"},
				)
				if code, reply := b.do("POST", "/v1/runs", agent, map[string]any{"plugin_names": []string{"search", "payroll"},
					"messages": []map[string]any{{"role": "user", "content": "payroll, then see"}}}); code != http.StatusOK {
					t.Fatalf("run: %d %v", code, reply)
				}
				reqs := llm.Requests()
				if len(reqs) != 2 {
					t.Fatalf("%d model calls, want 2", len(reqs))
				}
				for i, want := range [][]string{tc.first, tc.next} {
					if got := offered(t, reqs[i]); !slices.Equal(got, want) {
						t.Errorf("model call %d offered %v, want %v", i+1, got, want)
					}
				}
			})
		})
	}
}

// offered are the names of the tools a model request offers, sorted.
func offered(t *testing.T, req []byte) []string {
	t.Helper()
	var body struct {
		Tools []struct{ Function struct{ Name string } }
	}
	if err := json.Unmarshal(req, &body); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range body.Tools {
		names = append(names, tool.Function.Name)
	}
	slices.Sort(names)
	return names
}
