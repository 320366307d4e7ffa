package loop_test

import (
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

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
