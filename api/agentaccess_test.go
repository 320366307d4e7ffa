package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/internal/mcpts"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/store"
)

// agentEnv is ruoyiEnv with three agents: staff (list_users, list_roles,
// leave; no perms), roles (list_roles, weather; perms system:role:list,
// which user 2's common role has lost) and paused (weather, disabled).
func agentEnv(t *testing.T, opts ...func(*api.Server)) *ruoyiEnv {
	e := newRuoYiEnv(t, access.ModeOpen, opts...)
	for _, a := range []map[string]any{
		{"name": "staff", "tools": map[string]any{"names": []string{"list_users", "list_roles", "leave"}}},
		{"name": "roles", "tools": map[string]any{"names": []string{"list_roles", "weather"}}, "perms": []string{"system:role:list"}},
		{"name": "paused", "tools": map[string]any{"names": []string{"weather"}}, "status": "1"},
	} {
		if code, out := e.do("POST", "/v1/agents", adminToken, a); code != http.StatusCreated {
			t.Fatalf("add agent %s: %d %v", a["name"], code, out)
		}
	}
	return e
}

// agentVerdict is what a call of tool within agent gets for user in
// agentEnv: "" when sent, else the error code.
func agentVerdict(user int64, agent, tool string) string {
	switch {
	case agent == "nobody":
		return "agent_not_found"
	case agent == "paused":
		return "agent_disabled"
	case agent == "roles" && user == 2:
		return "permission_denied" // the agent's perms
	case !agentTools[agent][tool], !ruoyiGrants[user][tool]:
		return "permission_denied"
	}
	return ""
}

var agentTools = map[string]map[string]bool{
	"staff": {"list_users": true, "list_roles": true, "leave": true},
	"roles": {"list_roles": true, "weather": true},
}

// usableIn is what user may use within agent in agentEnv, by name.
func usableIn(user int64, agent string) []string {
	var out []string
	for tool := range agentTools[agent] {
		if agentVerdict(user, agent, tool) == "" {
			out = append(out, tool)
		}
	}
	slices.Sort(out)
	return out
}

// TestAgentCallsRuoYi: a direct call naming an agent is decided by the
// access rule within the agent, over RuoYi's tables: a tool outside the
// agent, an agent the user may not use, an unknown (404) or disabled
// (409) agent are refused and nothing is sent; the agent never grants a
// tool the user's roles do not. With the user's token and with the
// service's acting for the user, and over the call URLs a dynamic
// listing within the agent hands out (POST /v1/tools/{name}/call?agent=).
func TestAgentCallsRuoYi(t *testing.T) {
	e := agentEnv(t)
	status := map[string]int{"": http.StatusOK, "permission_denied": http.StatusForbidden,
		"agent_not_found": http.StatusNotFound, "agent_disabled": http.StatusConflict}
	for _, user := range []int64{1, 2} {
		for _, agent := range []string{"staff", "roles", "paused", "nobody"} {
			for _, tool := range []string{"list_users", "list_roles", "leave", "weather"} {
				for _, by := range []struct {
					name, token string
					body        map[string]any
					call        bool // POST /v1/tools/{name}/call?agent=
				}{
					{"user token", e.tokens[user], map[string]any{}, false},
					{"service token", serviceToken, map[string]any{"user_id": fmt.Sprint(user)}, false},
					{"call URL", e.tokens[user], nil, true},
				} {
					want := agentVerdict(user, agent, tool)
					t.Run(fmt.Sprintf("user %d %s %s %s", user, agent, tool, by.name), func(t *testing.T) {
						body := map[string]any{"name": tool, "agent": agent, "arguments": map[string]any{"q": "x"}}
						for k, v := range by.body {
							body[k] = v
						}
						path := "/v1/execute"
						if by.call {
							path, body = "/v1/tools/"+tool+"/call?agent="+agent, map[string]any{"q": "x"}
						}
						before := len(e.up.received())
						code, out := e.do("POST", path, by.token, body)
						sent := len(e.up.received()) > before
						if code != status[want] || sent != (want == "") || want != "" && errCodeOf(out) != want {
							t.Fatalf("%d %v, sent %v; want %s", code, out, sent, want)
						}
						if want == "permission_denied" && agentTools[agent][tool] == false && agent != "roles" {
							details := out["error"].(map[string]any)["details"].(map[string]any)
							if details["plugin"] != tool || details["agent"] != agent {
								t.Errorf("details %v: want the plugin and the agent named", details)
							}
						}
					})
				}
			}
		}
	}
}

// listedNames are the names of a JSON list's items (each under key...),
// sorted.
func listedNames(list any, key ...string) []string {
	out := []string{}
	items, _ := list.([]any)
	for _, it := range items {
		m := it.(map[string]any)
		for _, k := range key {
			m, _ = m[k].(map[string]any)
		}
		out = append(out, m["name"].(string))
	}
	slices.Sort(out)
	return out
}

// TestAgentListsRuoYi: GET /v1/tools?agent= (both formats, the dynamic
// one handing out call URLs within the agent) and
// /v1/tools/search?agent= answer within the agent's tools, narrowed to
// the user's (the service sees the agent's tools); GET /v1/agents lists
// to a per-user token the agents it may use, each with its tools only,
// and every agent to the service.
func TestAgentListsRuoYi(t *testing.T) {
	e := agentEnv(t)
	names := listedNames
	for _, user := range []int64{1, 2} {
		tok := e.tokens[user]
		for _, agent := range []string{"staff", "roles"} {
			want := usableIn(user, agent)
			if want == nil {
				continue // refused: below
			}
			_, list := e.do("GET", "/v1/tools?agent="+agent, tok, nil)
			if got := names(list["tools"], "function"); !slices.Equal(got, want) || list["total"] != float64(len(want)) {
				t.Errorf("user %d /v1/tools?agent=%s: %v, want %v", user, agent, got, want)
			}
			_, dyn := e.do("GET", "/v1/tools?format=dynamic&agent="+agent, tok, nil)
			if got := names(dyn["_dynamic_tools"]); !slices.Equal(got, want) {
				t.Errorf("user %d dynamic ?agent=%s: %v, want %v", user, agent, got, want)
			}
			// Each call URL stays within the agent (TestAgentCallsRuoYi
			// calls them).
			for _, d := range dyn["_dynamic_tools"].([]any) {
				if u := d.(map[string]any)["api_url"].(string); !strings.HasSuffix(u, "/call?agent="+agent) {
					t.Errorf("user %d dynamic ?agent=%s: api_url %s does not carry the agent", user, agent, u)
				}
			}
			for _, tool := range []string{"list_users", "list_roles", "leave", "weather"} {
				_, found := e.do("GET", "/v1/tools/search?agent="+agent+"&q="+tool, tok, nil)
				got := names(found["results"])
				if slices.Contains(got, tool) != slices.Contains(want, tool) || found["total"] != float64(len(got)) {
					t.Errorf("user %d search ?agent=%s&q=%s: %v (total %v)", user, agent, tool, got, found["total"])
				}
			}
		}
	}
	_, list := e.do("GET", "/v1/tools?agent=roles", serviceToken, nil)
	if got := names(list["tools"], "function"); !slices.Equal(got, []string{"list_roles", "weather"}) {
		t.Errorf("service /v1/tools?agent=roles: %v", got)
	}
	for _, tt := range []struct {
		token, agent string
		code         int
		err          string
	}{
		{e.tokens[2], "roles", http.StatusForbidden, "permission_denied"},
		{e.tokens[1], "paused", http.StatusConflict, "agent_disabled"},
		{serviceToken, "paused", http.StatusConflict, "agent_disabled"},
		{e.tokens[1], "nobody", http.StatusNotFound, "agent_not_found"},
	} {
		for _, path := range []string{"/v1/tools?agent=", "/v1/tools/search?q=roles&agent="} {
			if code, out := e.do("GET", path+tt.agent, tt.token, nil); code != tt.code || errCodeOf(out) != tt.err {
				t.Errorf("%s%s: %d %v, want %d %s", path, tt.agent, code, out, tt.code, tt.err)
			}
		}
	}

	for _, tt := range []struct {
		token string
		want  map[string][]string // agent → its tools as listed
	}{
		{e.tokens[1], map[string][]string{"staff": usableIn(1, "staff"), "roles": usableIn(1, "roles")}},
		{e.tokens[2], map[string][]string{"staff": usableIn(2, "staff")}},
		{serviceToken, map[string][]string{"staff": {"leave", "list_roles", "list_users"}, "roles": {"list_roles", "weather"}, "paused": {"weather"}}},
	} {
		code, out := e.do("GET", "/v1/agents", tt.token, nil)
		got := map[string][]string{}
		agents, _ := out["agents"].([]any)
		for _, a := range agents {
			m := a.(map[string]any)
			var tools []string
			for _, n := range m["tool_names"].([]any) {
				tools = append(tools, n.(string))
			}
			slices.Sort(tools)
			got[m["name"].(string)] = tools
		}
		if code != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("GET /v1/agents: %d %v, want %v", code, got, tt.want)
		}
	}
}

// TestAgentRunRuoYi: a run naming an agent offers the model the agent's
// tools the user may use (narrowed by plugin_names when both are given);
// a tool the model names outside them is a tool error and nothing is
// sent; an agent the user may not use refuses the run.
func TestAgentRunRuoYi(t *testing.T) {
	llm := openaitest.New(t)
	e := newRuoYiEnv(t, access.ModeOpen, withModel(llm))
	if code, out := e.do("POST", "/v1/agents", adminToken, map[string]any{"name": "staff",
		"tools": map[string]any{"names": []string{"list_users", "list_roles", "leave"}}}); code != http.StatusCreated {
		t.Fatalf("add agent: %d %v", code, out)
	}
	for _, tt := range []struct {
		name        string
		pluginNames []string
		offered     []string
	}{
		{"agent alone", nil, []string{"list_users"}},
		{"agent and plugin_names", []string{"list_users", "weather"}, []string{"list_users"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			asked := len(llm.Requests())
			llm.Script(
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "weather", Arguments: `{"q":"x"}`}, {Name: "list_roles", Arguments: `{"q":"x"}`}, {Name: "list_users", Arguments: `{"q":"x"}`}}},
				openaitest.Turn{Content: "done"},
			)
			before := len(e.up.received())
			body := map[string]any{"user_id": 2, "agent": "staff", "messages": []map[string]any{{"role": "user", "content": "users"}}}
			if tt.pluginNames != nil {
				body["plugin_names"] = tt.pluginNames
			}
			code, reply := e.do("POST", "/v1/runs", serviceToken, body)
			if code != http.StatusOK || reply["status"] != "completed" {
				t.Fatalf("run: %d %v", code, reply)
			}
			if got := offered(t, llm.Requests()[asked]); !slices.Equal(got, tt.offered) {
				t.Errorf("offered %v, want %v", got, tt.offered)
			}
			got := e.up.received()[before:]
			if len(got) != 1 || got[0].uri != "/list_users?q=x" {
				t.Fatalf("upstream received %v", got)
			}
			steps, _ := reply["steps"].([]any)
			if len(steps) != 3 || steps[0].(map[string]any)["status"] == "ok" || steps[1].(map[string]any)["status"] == "ok" || steps[2].(map[string]any)["status"] != "ok" {
				t.Fatalf("steps %v", steps)
			}
		})
	}
	t.Run("search_tools within the agent", func(t *testing.T) {
		// User 1 may use weather, outside the agent: the run's search
		// does not find it.
		asked := len(llm.Requests())
		llm.Script(
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "s", Name: "search_tools", Arguments: `{"query":"weather users roles leave","limit":5}`}}},
			openaitest.Turn{Content: "found"},
		)
		code, reply := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": 1, "agent": "staff",
			"messages": []map[string]any{{"role": "user", "content": "weather"}}, "options": map[string]any{"tool_search": "always"}})
		if code != http.StatusOK || reply["status"] != "completed" {
			t.Fatalf("run: %d %v", code, reply)
		}
		found := slices.DeleteFunc(offered(t, llm.Requests()[asked+1]), func(n string) bool { return n == "search_tools" || n == "call_tool" })
		if !slices.Equal(found, []string{"leave", "list_roles", "list_users"}) {
			t.Errorf("tools after the search: %v, want the agent's only", found)
		}
	})
	for agent, want := range map[string]int{"nobody": http.StatusNotFound} {
		code, out := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": 2, "agent": agent,
			"messages": []map[string]any{{"role": "user", "content": "users"}}})
		if code != want {
			t.Errorf("run within %s: %d %v, want %d", agent, code, out, want)
		}
	}
}

// TestAgentMCPRuoYi: /mcp/agents/{name} serves the agent's tools the
// user may use, over the Go SDK's client: exactly those listed, a call
// of another is an error and nothing is sent; an agent the user may not
// use, an unknown or a disabled one is refused before any MCP is spoken;
// an open session gets notifications/tools/list_changed when the agent
// changes, and lists its new tools.
func TestAgentMCPRuoYi(t *testing.T) {
	e := agentEnv(t)
	connect := func(tok, agent string, changed chan<- struct{}) (*sdk.ClientSession, error) {
		opts := &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			if changed != nil {
				changed <- struct{}{}
			}
		}}
		return sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, opts).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: e.url + "/mcp/agents/" + agent, HTTPClient: &http.Client{Transport: api.Bearer(tok)}}, nil)
	}
	list := func(cs *sdk.ClientSession) []string {
		t.Helper()
		listed, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tool := range listed.Tools {
			got = append(got, tool.Name)
		}
		slices.Sort(got)
		return got
	}
	for _, user := range []int64{1, 2} {
		for _, agent := range []string{"staff", "roles"} {
			want := usableIn(user, agent)
			cs, err := connect(e.tokens[user], agent, nil)
			if want == nil {
				if err == nil {
					cs.Close()
					t.Errorf("user %d /mcp/agents/%s: connected, want refused", user, agent)
				}
				continue
			}
			if err != nil {
				t.Fatalf("user %d /mcp/agents/%s: %v", user, agent, err)
			}
			if got := list(cs); !slices.Equal(got, want) {
				t.Errorf("user %d tools/list of %s: %v, want %v", user, agent, got, want)
			}
			for _, tool := range []string{"list_users", "list_roles", "leave", "weather"} {
				before := len(e.up.received())
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"q": "x"}})
				sent := len(e.up.received()) > before
				ok := err == nil && !res.IsError
				if ok != slices.Contains(want, tool) || sent != ok {
					t.Errorf("user %d %s over /mcp/agents/%s: ok %v (%v), sent %v", user, tool, agent, ok, err, sent)
				}
			}
			cs.Close()
		}
	}
	for agent, code := range map[string]int{"roles": http.StatusForbidden, "paused": http.StatusConflict, "nobody": http.StatusNotFound} {
		req, _ := http.NewRequest("POST", e.url+"/mcp/agents/"+agent, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Authorization", "Bearer "+e.tokens[2])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != code {
			t.Errorf("/mcp/agents/%s for user 2: %d, want %d", agent, res.StatusCode, code)
		}
	}

	// The agent changes: the open session is told, and lists anew.
	changed := make(chan struct{}, 8)
	cs, err := connect(e.tokens[2], "staff", changed)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := list(cs); !slices.Equal(got, []string{"list_users"}) {
		t.Fatalf("before the change: %v", got)
	}
	if code, out := e.do("PUT", "/v1/agents/staff", adminToken, map[string]any{"name": "staff",
		"tools": map[string]any{"names": []string{"list_users", "weather"}}}); code != http.StatusOK {
		t.Fatalf("change the agent: %d %v", code, out)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the agent changed")
	}
	if got := list(cs); !slices.Equal(got, []string{"list_users", "weather"}) {
		t.Errorf("after the change: %v, want weather added", got)
	}
}

// TestAgentMCPOutsideAndDeleted: over /mcp/agents/{name}, a call of a
// catalog tool outside the agent is refused as /mcp refuses a tool its
// user may not use — by the executor, a tool error naming
// permission_denied and the agent, an execution record, nothing sent —
// and a name no catalog tool has is an unknown tool (-32602) on both;
// once the agent is deleted, its MCP server is dropped (the open
// session with it) and a request naming it is 404 agent_not_found.
func TestAgentMCPOutsideAndDeleted(t *testing.T) {
	var srv *api.Server
	e := agentEnv(t, func(s *api.Server) { srv = s })
	connect := func(path string, user int64) *sdk.ClientSession {
		t.Helper()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: e.url + path, HTTPClient: &http.Client{Transport: api.Bearer(e.tokens[user])}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	for _, tt := range []struct {
		path, tool, agent string
		user              int64
	}{
		{"/mcp/agents/staff", "weather", "staff", 1}, // usable, outside the agent
		{"/mcp", "list_roles", "", 2},                // in the catalog, not usable
	} {
		cs := connect(tt.path, tt.user)
		before := len(e.up.received())
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tt.tool, Arguments: map[string]any{"q": "x"}})
		if err != nil || !res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s %s: %v %v, want a tool error", tt.path, tt.tool, res, err)
		}
		var refusal struct {
			Error struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
			ExecutionID string `json:"execution_id"`
		}
		if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &refusal); err != nil {
			t.Fatal(err)
		}
		if refusal.Error.Code != "permission_denied" || refusal.ExecutionID == "" || refusal.Error.Details["plugin"] != tt.tool ||
			tt.agent != "" && refusal.Error.Details["agent"] != tt.agent || len(e.up.received()) != before {
			t.Errorf("%s %s: %+v, sent %v; want permission_denied recorded, nothing sent", tt.path, tt.tool, refusal, len(e.up.received()) != before)
		}
		_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("%s no_such_tool: %v, want unknown tool", tt.path, err)
		}
		cs.Close()
	}

	if got := srv.AgentServers(); !slices.Equal(got, []string{"staff"}) {
		t.Fatalf("agent servers before the deletion: %v", got)
	}
	if code, out := e.do("DELETE", "/v1/agents/staff", adminToken, nil); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("delete staff: %d %v", code, out)
	}
	if _, err := e.changes.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := srv.AgentServers(); len(got) != 0 {
		t.Errorf("agent servers after staff was deleted: %v, want none", got)
	}
	req, _ := http.NewRequest("POST", e.url+"/mcp/agents/staff", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	req.Header.Set("Authorization", "Bearer "+e.tokens[1])
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || errCodeOf(body) != "agent_not_found" {
		t.Errorf("/mcp/agents/staff once deleted: %d %v, want 404 agent_not_found", res.StatusCode, body)
	}
	if got := srv.AgentServers(); len(got) != 0 {
		t.Errorf("a request naming the deleted agent made its server again: %v", got)
	}

	// The refusals are recorded with their own outcome.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"weather", "list_roles"} {
		recs, err := e.st.ListExecutions(ctx, store.ExecutionFilter{PluginName: tool})
		if err != nil || len(recs) != 1 || recs[0].Status != "refused" || recs[0].ErrorClass != "permission_denied" {
			t.Errorf("records of %s: %+v %v, want one refused permission_denied", tool, recs, err)
		}
	}
}

// TestAccessResumeNarrowed: a run is narrowed by the fixed perms of the
// token that started it on every resume, whoever resumes it: the
// administrator approving a paused call of user 1's narrowed token does
// not lift the narrowing, so the tool the token's perms do not grant is
// neither offered nor sent after the resume (before issue 46's fix, the
// resume offered it and it waited for a person again).
func TestAccessResumeNarrowed(t *testing.T) {
	llm := openaitest.New(t)
	e := newRuoYiEnv(t, access.ModeOpen, withModel(llm), func(s *api.Server) { s.Runner.Confirm = confirm.Always })
	tok, _, err := api.IssueToken(context.Background(), e.st, 1, "narrowed", 0, "", "system:user:list")
	if err != nil {
		t.Fatal(err)
	}
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "list_users", Arguments: `{"q":"x"}`}}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "list_roles", Arguments: `{"q":"x"}`}}},
		openaitest.Turn{Content: "done"},
	)
	code, reply := e.do("POST", "/v1/runs", tok, map[string]any{"plugin_names": []string{"list_users", "list_roles"},
		"messages": []map[string]any{{"role": "user", "content": "users and roles"}}})
	if code != http.StatusOK || reply["status"] != "paused" {
		t.Fatalf("run: %d %v", code, reply)
	}
	id := reply["pending"].([]any)[0].(map[string]any)["id"].(string)
	code, done := e.do("POST", "/v1/runs/"+reply["run_id"].(string)+"/resume", adminToken,
		map[string]any{"decisions": []map[string]string{{"id": id, "decision": "approve"}}})
	if code != http.StatusOK || done["status"] != "completed" {
		t.Fatalf("resume: %d %v, want completed with list_roles refused", code, done)
	}
	if got := e.up.received(); len(got) != 1 || got[0].uri != "/list_users?q=x" {
		t.Fatalf("upstream received %v, want list_users only", got)
	}
	steps, _ := done["steps"].([]any)
	last := steps[len(steps)-1].(map[string]any)
	// Not offered after the resume either: the model naming it is told
	// there is no such tool.
	if last["tool"] != "list_roles" || last["status"] != "unknown_tool" {
		t.Errorf("last step %v, want list_roles refused", last)
	}

	// A run paused within an agent that is disabled meanwhile: its resume
	// is refused (409) and the run stays paused, nothing sent.
	if code, out := e.do("POST", "/v1/agents", adminToken, map[string]any{"name": "staff", "tools": map[string]any{"names": []string{"list_users"}}}); code != http.StatusCreated {
		t.Fatalf("add agent: %d %v", code, out)
	}
	llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "list_users", Arguments: `{"q":"y"}`}}})
	code, reply = e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": 1, "agent": "staff",
		"messages": []map[string]any{{"role": "user", "content": "users"}}})
	if code != http.StatusOK || reply["status"] != "paused" {
		t.Fatalf("run within staff: %d %v", code, reply)
	}
	if code, out := e.do("PUT", "/v1/agents/staff", adminToken, map[string]any{"name": "staff", "status": "1", "tools": map[string]any{"names": []string{"list_users"}}}); code != http.StatusOK {
		t.Fatalf("disable agent: %d %v", code, out)
	}
	run := reply["run_id"].(string)
	id = reply["pending"].([]any)[0].(map[string]any)["id"].(string)
	code, out := e.do("POST", "/v1/runs/"+run+"/resume", adminToken, map[string]any{"decisions": []map[string]string{{"id": id, "decision": "approve"}}})
	if code != http.StatusConflict || errCodeOf(out) != "agent_disabled" || len(e.up.received()) != 1 {
		t.Fatalf("resume within a disabled agent: %d %v, %d sent", code, out, len(e.up.received()))
	}
	if _, got := e.do("GET", "/v1/runs/"+run, serviceToken, nil); got["status"] != "paused" {
		t.Errorf("the run after the refused resume: %v, want still paused", got["status"])
	}
}

// TestAccessMCPSearchFull: search_tools over /mcp and /mcp/agents/{name}
// filters what the user may not use before it takes a page, so that a
// page is full: user 2 asking for one result of "list roles", whose best
// match (list_roles) it may not use, gets list_users.
func TestAccessMCPSearchFull(t *testing.T) {
	e := agentEnv(t, func(s *api.Server) { s.MCP.ToolSearch = toolset.Config{Mode: toolset.ModeAlways} })
	for _, path := range []string{"/mcp", "/mcp/agents/staff"} {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: e.url + path, HTTPClient: &http.Client{Transport: api.Bearer(e.tokens[2])}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "list roles", "limit": 1}})
		cs.Close()
		if err != nil || res.IsError {
			t.Fatalf("%s search_tools: %v %+v", path, err, res)
		}
		var ans struct{ Tools []struct{ Name string } }
		if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &ans); err != nil {
			t.Fatal(err)
		}
		if len(ans.Tools) != 1 || ans.Tools[0].Name != "list_users" {
			t.Errorf("%s search_tools: %+v, want a full page: list_users", path, ans.Tools)
		}
	}
}

// TestAgentMCPTypeScript (issue 46 point 5): with the official
// TypeScript SDK's client, user 2 of RuoYi's common role lists over /mcp
// exactly the tools its permissions allow and over /mcp/agents/staff
// those within the agent, and a call of a tool outside them is refused
// with nothing sent.
func TestAgentMCPTypeScript(t *testing.T) {
	mcpts.Require(t)
	e := agentEnv(t)
	tools := []string{"list_users", "list_roles", "leave", "weather"}
	for path, want := range map[string][]string{"/mcp": {"list_users", "weather"}, "/mcp/agents/staff": usableIn(2, "staff")} {
		before := len(e.up.received())
		out := mcpts.Run(t, time.Minute, nil, "calls_client.mjs", append([]string{e.url + path, e.tokens[2], `{"q":"x"}`}, tools...)...)
		var got struct {
			Tools []string
			Calls map[string]struct{ IsError bool }
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %s: %v", path, out, err)
		}
		if slices.Sort(got.Tools); !slices.Equal(got.Tools, want) {
			t.Errorf("%s lists %v to user 2, want %v", path, got.Tools, want)
		}
		var sent []string
		for _, r := range e.up.received()[before:] {
			sent = append(sent, strings.TrimPrefix(strings.Split(r.uri, "?")[0], "/"))
		}
		slices.Sort(sent)
		if !slices.Equal(sent, want) {
			t.Errorf("%s: the upstream received %v, want the calls of %v only", path, sent, want)
		}
		for _, tool := range tools {
			if got.Calls[tool].IsError == slices.Contains(want, tool) {
				t.Errorf("%s %s: error %v", path, tool, got.Calls[tool].IsError)
			}
		}
	}
}
