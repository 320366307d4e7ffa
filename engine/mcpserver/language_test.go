package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/access"
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
	cs := inMemory(t, svc)
	list, err := cs.ListTools(t.Context(), nil)
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

// grants is a source of one user's permission strings that a test
// changes, as a role changed in RuoYi.
type grants struct {
	mu    sync.Mutex
	perms []string
}

func (g *grants) set(perms ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.perms = perms
}

func (g *grants) Held(context.Context, int64) (access.Held, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return access.HeldOf(g.perms...), nil
}

// TestSearchLanguagesFollowTheGrants: search_tools names the languages of the tools the session's user may use as the user's
// permission strings are read now (after BLINDEXEC_PERMISSIONS_TTL_MS, 0
// here), not as they were when the catalog last changed. Before, a view
// was kept per subject and catalog version: the user granted the Chinese
// tools' permission was still told the tools were described in English
// only, and one whose grant was withdrawn still in English and Chinese.
func TestSearchLanguagesFollowTheGrants(t *testing.T) {
	up := echoUpstream(t)
	ps := echoTools(up.URL, "list_repos", "delete_repo", "payroll_query", "payroll_bonus")
	ps[0].Title, ps[1].Title = "List repositories", "Delete a repository"
	ps[2].Title, ps[2].Description, ps[2].Perms = "查询工资单", "财务部门的内部工具，仅限授权人员使用", []string{"hr:payroll:list"}
	ps[3].Title, ps[3].Description, ps[3].Perms = "发放年终奖金", "财务部门的内部工具，仅限授权人员使用", []string{"hr:payroll:list"}
	src := &grants{}
	checker := &access.Checker{Source: access.NewCache(src, 0), Name: access.SourceQuery}
	svc := mcpserver.NewService(&liveCatalog{ps: ps, version: 1}, engine.NewExecutor(egresstest.Client(t)), mcpserver.Options{
		Search: toolset.Config{Mode: toolset.ModeAlways}, Access: checker,
	})
	cs := inMemory(t, svc)
	for _, step := range []struct {
		grant []string
		want  string
	}{
		{nil, "described in English;"},
		{[]string{"hr:payroll:list"}, "described in English and Chinese;"},
		{nil, "described in English;"},
	} {
		src.set(step.grant...)
		// A search finding nothing names them (as search_tools' description
		// does, which a client keeps for the list's TTL).
		if txt, _ := callText(t, cs, "search_tools", map[string]any{"query": "zyzzyva"}); !strings.Contains(txt, step.want) {
			t.Errorf("granted %v: search_tools found nothing: %s, want %q", step.grant, txt, step.want)
		}
	}
}
