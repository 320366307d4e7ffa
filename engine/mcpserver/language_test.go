package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/toolset"
)

// TestSearchNamesLanguages: with the engine's index, search_tools says in
// which languages the tools are written; a Chinese search finds English
// tools through the dictionary (issue 49), and a search none of whose
// words any tool has, nor the dictionary translates, says so, with that
// hint, instead of returning noise.
func TestSearchNamesLanguages(t *testing.T) {
	up := echoUpstream(t)
	ps := echoTools(up.URL, "list_repos", "delete_repo", "create_issue")
	ps[0].Title, ps[1].Title, ps[2].Title = "List repositories", "Delete a repository", "Create an issue"
	svc := mcpserver.NewService(&liveCatalog{ps: ps, version: 1}, engine.NewExecutor(egresstest.Client(t)), mcpserver.Options{
		Search: toolset.Config{Mode: toolset.ModeAlways},
	})
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.NewServer(7).Run(ctx, st)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := list.Tools[0].Description; list.Tools[0].Name != "search_tools" || !strings.Contains(d, "The tools are described in English: write the query in English") {
		t.Errorf("search_tools: %q", d)
	}
	if txt, _ := callText(t, cs, "search_tools", map[string]any{"query": "删除仓库"}); !strings.Contains(txt, `"tools":[{"name":"delete_repo"`) {
		t.Errorf("a Chinese search of English tools = %s", txt)
	}
	if txt, _ := callText(t, cs, "search_tools", map[string]any{"query": "저장소 삭제"}); !strings.Contains(txt, `"tools":[]`) || !strings.Contains(txt, "described in English; search again in English") {
		t.Errorf("a Korean search of English tools = %s", txt)
	}
	if txt, _ := callText(t, cs, "search_tools", map[string]any{"query": "delete the repository"}); !strings.Contains(txt, `"delete_repo"`) {
		t.Errorf("an English search = %s", txt)
	}
}
