package loop_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/plugins"
)

// TestSearchToolNamesLanguages: with the engine's index, the model's
// search_tools names the languages of the run's tools; a search in
// Chinese finds English tools through the dictionary (issue 49), and one
// in a language the engine has no dictionary for is answered with no
// tools and that hint.
func TestSearchToolNamesLanguages(t *testing.T) {
	up := newUpstream(t, echo)
	var ps []*plugins.Plugin
	for _, name := range []string{"list_repos", "delete_repo", "create_issue"} {
		ps = append(ps, echoPlugin(t, name, up.URL))
	}
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("s1", "search_tools", `{"query":"删除仓库"}`), call("s2", "search_tools", `{"query":"저장소 삭제"}`)}},
		openaitest.Turn{Content: "done"},
	)
	r := newRunner(t, llm)
	r.ToolSearch = toolset.Config{Mode: toolset.ModeAlways}
	reply := r.Run(t.Context(), loop.Request{Messages: user("删除仓库"), Plugins: ps}, func(loop.Event) {})
	wantStatus(t, reply, loop.StatusCompleted)

	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(llm.Requests()[0], &req); err != nil {
		t.Fatal(err)
	}
	if d := req.Tools[0].Function.Description; req.Tools[0].Function.Name != "search_tools" || !strings.Contains(d, "The tools are described in English") {
		t.Errorf("search_tools: %q", d)
	}
	_, contents := toolContents(reply)
	if len(contents) != 2 || !strings.Contains(contents[0], `{"name":"delete_repo"`) {
		t.Errorf("a Chinese search of English tools = %v", contents)
	}
	if len(contents) != 2 || !strings.Contains(contents[1], `"tools":[]`) || !strings.Contains(contents[1], "search again in English") {
		t.Errorf("a Korean search of English tools = %v", contents)
	}
}

// shrinkingOffer offers every tool until shrink, then all but the
// payroll ones: a token narrowed during the run, as the executor's Usable
// would tell it (engine's and api's tests cover that reading).
type shrinkingOffer struct {
	mu     sync.Mutex
	shrunk bool
}

func (o *shrinkingOffer) shrink() { o.mu.Lock(); o.shrunk = true; o.mu.Unlock() }

func (o *shrinkingOffer) Usable(_ context.Context, _ engine.Call, ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.shrunk {
		return ps, nil
	}
	return slices.DeleteFunc(slices.Clone(ps), func(p *plugins.Plugin) bool { return strings.HasPrefix(p.Name, "payroll") }), nil
}

// TestSearchFollowsTheOffer: with tool search, a run whose tools are
// narrowed during it (the Chinese payroll tools taken away during its
// first call) names at its next model call the languages of the tools
// offered then, and its searches find only those. Before, search_tools
// kept naming Chinese, and a search found the payroll tools, as at the
// run's start.
func TestSearchFollowsTheOffer(t *testing.T) {
	offer := &shrinkingOffer{}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		offer.shrink() // during the run's first call
		echo(w, r)
	})
	var ps []*plugins.Plugin
	for _, name := range []string{"list_repos", "delete_repo", "payroll_query", "payroll_bonus"} {
		ps = append(ps, echoPlugin(t, name, up.URL))
	}
	ps[0].Title, ps[1].Title = "List repositories", "Delete a repository"
	ps[2].Title, ps[2].Description = "查询工资单", "财务部门的内部工具，仅限授权人员使用"
	ps[3].Title, ps[3].Description = "发放年终奖金", "财务部门的内部工具，仅限授权人员使用"
	llm := openaitest.New(t)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("c1", "list_repos", `{"q":"x"}`)}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("s1", "search_tools", `{"query":"查询工资单"}`)}},
		openaitest.Turn{Content: "done"},
	)
	r := newRunner(t, llm)
	r.ToolSearch = toolset.Config{Mode: toolset.ModeAlways}
	r.Offer = offer
	reply := r.Run(t.Context(), loop.Request{Messages: user("工资"), Plugins: ps}, func(loop.Event) {})
	wantStatus(t, reply, loop.StatusCompleted)
	for i, want := range []string{"described in English and Chinese:", "described in English:"} {
		var req openai.ChatCompletionRequest
		if err := json.Unmarshal(llm.Requests()[i], &req); err != nil {
			t.Fatal(err)
		}
		if d := req.Tools[0].Function.Description; req.Tools[0].Function.Name != "search_tools" || !strings.Contains(d, want) {
			t.Errorf("model call %d: search_tools: %q, want %q", i+1, d, want)
		}
	}
	if _, contents := toolContents(reply); len(contents) != 2 || strings.Contains(contents[1], "payroll") {
		t.Errorf("the search after the narrowing found %v, want no payroll tool", contents)
	}
}
