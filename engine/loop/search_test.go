package loop_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/internal/githubcatalog"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
)

// nameIndex finds the tools whose name contains the query, in catalog
// order: a ranking the tests can predict, so that they check the loading
// and not the ranking (toolsearch has its own tests).
type nameIndex []*plugins.Plugin

func (ix nameIndex) Search(q string, limit int) []toolsearch.Result {
	var out []toolsearch.Result
	for _, p := range ix {
		if strings.Contains(p.Name, q) && len(out) < limit {
			out = append(out, toolsearch.Result{Name: p.Name, Score: 1, Plugin: p})
		}
	}
	return out
}

func byName(ps []*plugins.Plugin) (toolset.Searcher, error) { return nameIndex(ps), nil }

// sentTools are the tool names of each model request.
func sentTools(t *testing.T, llm *openaitest.Server) [][]string {
	t.Helper()
	var out [][]string
	for _, body := range llm.Requests() {
		var req openai.ChatCompletionRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Function.Name)
		}
		out = append(out, names)
	}
	return out
}

// TestToolSearchLoadsFoundTools: past the threshold the model sees
// search_tools and the pinned tool; what a search finds joins the next
// requests, never more than the threshold, the least recently used
// dropped first; a tool called while not shown is loaded again.
func TestToolSearchLoadsFoundTools(t *testing.T) {
	up := newUpstream(t, echo)
	var ps []*plugins.Plugin
	for _, name := range []string{"pin", "repo_a", "repo_b", "team_c", "team_d", "user_e"} {
		ps = append(ps, echoPlugin(t, name, up.URL))
	}
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("s1", "search_tools", `{"query":"repo"}`)}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{
			call("c1", "repo_a", `{"q":"1"}`),
			call("s2", "search_tools", `{"query":"team_c"}`),
		}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c2", "repo_b", `{"q":"2"}`)}},
		openaitest.Turn{Content: "done"},
	)
	r := newRunner(t, llm)
	r.ToolSearch = toolset.Config{Threshold: 3} // the pin and two loaded
	r.NewIndex = byName
	var ev events
	reply := r.Run(t.Context(), loop.Request{
		Messages: user("hi"), Plugins: ps,
		Options: loop.Options{PinnedTools: []string{"pin"}},
	}, ev.emit)
	wantStatus(t, reply, loop.StatusCompleted)

	want := [][]string{
		{"search_tools", "pin"},
		{"search_tools", "pin", "repo_a", "repo_b"},
		{"search_tools", "pin", "repo_a", "team_c"}, // repo_b was the least recently used
		{"search_tools", "pin", "team_c", "repo_b"}, // repo_b called: loaded again, repo_a out
	}
	if got := sentTools(t, llm); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("tools per request:\n got %v\nwant %v", got, want)
	}

	var searches []loop.ToolSearch
	for _, e := range ev {
		if e.Name == loop.EventToolSearch {
			searches = append(searches, e.Data.(loop.ToolSearch))
		}
		if e.Name == loop.EventRunStarted {
			if rs := e.Data.(loop.RunStarted); !slices.Equal(rs.Tools, []string{"search_tools", "pin"}) || rs.Searchable != 6 {
				t.Errorf("run.started = %+v", rs)
			}
		}
		if e.Name == loop.EventToolStarted && e.Data.(loop.ToolStarted).Tool == "search_tools" {
			t.Errorf("a search emitted tool.started")
		}
	}
	if len(searches) != 2 {
		t.Fatalf("tool.search events: %+v (all: %v)", searches, ev.names())
	}
	if s := searches[0]; s.Query != "repo" || s.Limit != toolset.DefaultLimit || len(s.Results) != 2 ||
		!slices.Equal(s.Loaded, []string{"repo_a", "repo_b"}) || len(s.Dropped) != 0 || s.Turn != 1 || s.ToolCallID != "s1" {
		t.Errorf("first search = %+v", s)
	}
	if s := searches[1]; !slices.Equal(s.Loaded, []string{"team_c"}) || !slices.Equal(s.Dropped, []string{"repo_b"}) {
		t.Errorf("second search = %+v", s)
	}

	// The trace has the searches as steps, with what they found.
	var steps []string
	for _, st := range reply.Steps {
		steps = append(steps, fmt.Sprintf("%s:%s:%v", st.Tool, st.Status, st.Found))
	}
	if want := []string{"search_tools:ok:[repo_a repo_b]", "repo_a:ok:[]", "search_tools:ok:[team_c]", "repo_b:ok:[]"}; !slices.Equal(steps, want) {
		t.Errorf("steps = %v, want %v", steps, want)
	}
	// The model read the matches: a line each and the parameter names.
	_, contents := toolContents(reply)
	var found struct {
		Tools []toolset.Match
		Note  string
	}
	if err := json.Unmarshal([]byte(contents[0]), &found); err != nil || len(found.Tools) != 2 || found.Tools[0].Name != "repo_a" ||
		found.Tools[0].Description != "Looks a keyword up." || !slices.Equal(found.Tools[0].Parameters, []string{"q"}) {
		t.Errorf("search result = %s (%v)", contents[0], err)
	}
}

// TestToolSearchModes: auto switches at the threshold, always and off
// override it, and a tool_choice's function is shown on the first call.
func TestToolSearchModes(t *testing.T) {
	up := newUpstream(t, echo)
	plugs := func(n int) []*plugins.Plugin {
		var ps []*plugins.Plugin
		for i := range n {
			ps = append(ps, echoPlugin(t, fmt.Sprintf("t%d", i), up.URL))
		}
		return ps
	}
	for _, tc := range []struct {
		name    string
		n       int
		mode    string
		def     toolset.Mode
		choice  any
		want    []string
		wantLen int
	}{
		{name: "auto at the threshold", n: 3, wantLen: 3},
		{name: "auto past the threshold", n: 4, want: []string{"search_tools"}},
		{name: "always", n: 1, mode: "always", want: []string{"search_tools"}},
		{name: "off", n: 4, mode: "off", wantLen: 4},
		{name: "operator off", n: 4, def: toolset.ModeOff, wantLen: 4},
		{name: "request overrides operator", n: 4, mode: "auto", def: toolset.ModeOff, want: []string{"search_tools"}},
		{name: "forced function shown", n: 4, choice: map[string]any{"type": "function", "function": map[string]any{"name": "t2"}}, want: []string{"search_tools", "t2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llm := openaitest.New(t)
			llm.Script(openaitest.Turn{Content: "ok"})
			r := newRunner(t, llm)
			r.ToolSearch = toolset.Config{Mode: tc.def, Threshold: 3}
			r.NewIndex = byName
			reply := r.Run(t.Context(), loop.Request{Messages: user("hi"), Plugins: plugs(tc.n),
				Options: loop.Options{ToolSearch: tc.mode, ToolChoice: tc.choice}}, nil)
			wantStatus(t, reply, loop.StatusCompleted)
			got := sentTools(t, llm)[0]
			if tc.want != nil && !slices.Equal(got, tc.want) || tc.want == nil && (len(got) != tc.wantLen || slices.Contains(got, "search_tools")) {
				t.Errorf("tools = %v", got)
			}
		})
	}
}

// TestToolSearchRefusals: bad search arguments and unknown tools go back
// to the model; too many pinned tools fail the run before any model call.
func TestToolSearchRefusals(t *testing.T) {
	up := newUpstream(t, echo)
	var ps []*plugins.Plugin
	for i := range 5 {
		ps = append(ps, echoPlugin(t, fmt.Sprintf("t%d", i), up.URL))
	}
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{
			call("a", "search_tools", `{"limit":2}`),
			call("b", "search_tools", `{"query":`),
			call("c", "nope", `{}`),
			call("d", "search_tools", `{"query":"`+strings.Repeat("t", 2001)+`"}`),
		}},
		openaitest.Turn{Content: "sorry"},
	)
	r := newRunner(t, llm)
	r.ToolSearch = toolset.Config{Threshold: 3}
	r.NewIndex = byName
	var ev events
	reply := r.Run(t.Context(), loop.Request{Messages: user("hi"), Plugins: ps}, ev.emit)
	wantStatus(t, reply, loop.StatusCompleted)
	var statuses []string
	for _, st := range reply.Steps {
		statuses = append(statuses, st.Status)
	}
	if !slices.Equal(statuses, []string{loop.StepRefused, loop.StepInvalidJSON, loop.StepUnknownTool, loop.StepRefused}) {
		t.Errorf("statuses = %v", statuses)
	}
	_, contents := toolContents(reply)
	// Issue 30: the default query limit, named, before any search.
	if !strings.Contains(contents[0], "query is required") || !strings.Contains(contents[2], "call search_tools to find") || strings.Contains(contents[2], "t4") ||
		!strings.Contains(contents[3], "limit of 2000 characters (BLINDEXEC_MAX_QUERY_CHARS)") {
		t.Errorf("contents = %q", contents)
	}
	if n := strings.Count(strings.Join(ev.names(), " "), loop.EventToolSearch); n != 3 {
		t.Errorf("events = %v", ev.names())
	}

	llm = openaitest.New(t)
	r = newRunner(t, llm)
	r.ToolSearch = toolset.Config{Threshold: 3}
	reply = r.Run(t.Context(), loop.Request{Messages: user("hi"), Plugins: ps,
		Options: loop.Options{PinnedTools: []string{"t0", "t1", "t2"}}}, nil)
	wantStatus(t, reply, loop.StatusFailed)
	if reply.Error.Code != loop.CodeInvalidRequest || !strings.Contains(reply.Error.Message, "pinned_tools") || len(llm.Requests()) != 0 {
		t.Errorf("three pinned of threshold 3: %+v", reply.Error)
	}
}

// TestToolSearchGitHubCatalog: a turn bound to GitHub's whole REST API
// (1,100+ tools) against a model that, like OpenAI, refuses more than 128
// tools: the model searches, the found tool is loaded and called against
// a loopback upstream, and the model answers.
func TestToolSearchGitHubCatalog(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"README.md","encoding":"base64","content":"SGVsbG8="}`)
	})
	catalog := githubcatalog.Plugins(t, up.URL)
	if len(catalog) <= openaitest.MaxTools {
		t.Fatalf("GitHub's catalog has %d tools", len(catalog))
	}

	// Without tool search the model refuses the request.
	llm := openaitest.New(t)
	r := newRunner(t, llm)
	r.LLMRetries = -1
	reply := r.Run(t.Context(), loop.Request{Messages: user("hi"), Plugins: catalog, Options: loop.Options{ToolSearch: "off"}}, nil)
	if reply.Status != loop.StatusFailed || !strings.Contains(reply.Error.Message, "array_above_max_length") && !strings.Contains(reply.Error.Message, "maximum length 128") {
		t.Fatalf("every tool sent: %s %+v", reply.Status, reply.Error)
	}

	llm = openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("s", "search_tools", `{"query":"get the README of a repository"}`)}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c", "repos_get-readme", `{"owner":"octocat","repo":"hello-world"}`)}},
		openaitest.Turn{Content: "The README says Hello."},
	)
	r = newRunner(t, llm)
	var ev events
	reply = r.Run(t.Context(), loop.Request{UserID: 7, Messages: user("What does the README of octocat/hello-world say?"), Plugins: catalog}, ev.emit)
	wantStatus(t, reply, loop.StatusCompleted)
	if reply.Message.Content != "The README says Hello." {
		t.Errorf("answer = %q", reply.Message.Content)
	}
	tools := sentTools(t, llm)
	if len(tools) != 3 || !slices.Equal(tools[0], []string{"search_tools"}) || !slices.Contains(tools[1], "repos_get-readme") {
		t.Fatalf("tools per request = %v", tools)
	}
	for i, names := range tools {
		if len(names) > toolset.DefaultThreshold+1 {
			t.Errorf("request %d has %d tools", i+1, len(names))
		}
	}
	if len(reply.Steps) != 2 || !slices.Contains(reply.Steps[0].Found, "repos_get-readme") || reply.Steps[1].Status != loop.StepOK {
		t.Errorf("steps = %+v", reply.Steps)
	}
	if !slices.Equal(got, []string{"GET /repos/octocat/hello-world/readme"}) {
		t.Errorf("upstream got %v", got)
	}
	if !slices.Contains(ev.names(), loop.EventToolSearch) {
		t.Errorf("events = %v", ev.names())
	}
}
