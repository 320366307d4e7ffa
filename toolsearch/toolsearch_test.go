package toolsearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

func TestAnalyzer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"repos_list-for-org", []string{"repo", "list", "org"}},
		{"getUserInfo", []string{"get", "user", "info"}},
		{"HTTPServer v2", []string{"http", "server", "v2"}},
		{"Deleting the repositories of 42 organizations", []string{"delet", "repo", "org"}},
		{"pull request", []string{"pull", "pr", "request"}},
		// an acronym's plural, an agent noun in -ee
		{"open PRs, listURLsFor", []string{"open", "pr", "list", "url"}},
		{"assignees of invitees", []string{"assign", "invit"}},
		// CJK: each character, each pair; 用户 is "user" in any language
		{"删除用户", []string{"删", "除", "删除", "用", "除用", "户", "user"}},
		{"导出 user 列表", []string{"导", "出", "导出", "user", "列", "表", "列表"}},
		{"ユーザー削除", []string{"ユ", "ー", "ユー", "ザ", "ーザ", "ー", "ザー", "削", "ー削", "除", "削除"}},
		{"사용자 삭제", []string{"사", "용", "사용", "자", "용자", "삭", "제", "삭제"}},
		{"的用户", []string{"用", "的用", "户", "user"}}, // a particle alone is no term
	} {
		var got []string
		analyzer{}.each(tc.in, func(term string, _ int) { got = append(got, term) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestQueryConcepts(t *testing.T) {
	got := fmt.Sprint(analyzer{}.analyzeQuery("turn off the wiki"))
	// "turn off" says disable: its own word "turn" drops out.
	if want := "[[{wiki 1}] [{disabl 0.5} {deactiv 0.5} {停用 0.5} {禁用 0.5} {关闭 0.5} {暂停 0.5}]]"; got != want {
		t.Errorf("concepts = %s\nwant       %s", got, want)
	}
	got = fmt.Sprint(analyzer{}.analyzeQuery("delete repos"))
	if want := "[[{delet 1} {remov 0.5} {drop 0.5} {destroy 0.5} {eras 0.5} {purg 0.5} {discard 0.5} {删除 0.5} {删掉 0.5} {移除 0.5} {去掉 0.5} {撤销 0.5} {清除 0.5}] [{repo 1}]]"; got != want {
		t.Errorf("concepts = %s\nwant       %s", got, want)
	}
}

func TestSplitPayload(t *testing.T) {
	for _, tc := range []struct{ q, ask, payload string }{
		{"create a private repo called notes", "create a private repo", "notes"},
		{"open an issue saying the login page is broken, and assign it to me", "open an issue , and assign it to me", "the login page is broken"},
		{`add a label "good first issue" to #3`, "add a label to #3", "good first issue"},
		{"rename the branch to v2.1 titled Beta. Then list it", "rename the branch to v2.1 . Then list it", "Beta"},
	} {
		ask, payload := splitPayload(tc.q)
		if strings.Join(strings.Fields(ask), " ") != tc.ask || strings.Join(strings.Fields(payload), " ") != tc.payload {
			t.Errorf("splitPayload(%q) = %q, %q", tc.q, ask, payload)
		}
	}
	got := fmt.Sprint(analyzer{}.analyzeQuery("a repo called notes"))
	if want := "[[{repo 1}] [{note 0.2}]]"; got != want {
		t.Errorf("concepts = %s, want %s", got, want)
	}
}

func TestValueKinds(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want string
	}{
		{"commit a new version of docs/setup.md", "[[file path]]"},
		{"publish v3.1.0, then mail ann@example.com", "[[version tag release] [email]]"},
		{"open (https://example.com/x) and README.md", "[[url link] [file path]]"},
		{"octocat/hello-world on 3 May", "[]"},
	} {
		if got := fmt.Sprint(valueKinds(tc.q)); got != tc.want {
			t.Errorf("valueKinds(%q) = %s, want %s", tc.q, got, tc.want)
		}
	}
}

func plugin(name, title, desc string, mutate ...func(*plugins.Plugin)) *plugins.Plugin {
	p := &plugins.Plugin{Name: name, Title: title, Description: desc,
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Execution:  plugins.Execution{Method: "GET", BaseURL: "https://api.example.com/" + name}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

var catalog = []*plugins.Plugin{
	plugin("issues_create", "Create an issue", "Opens a new issue in a repository."),
	plugin("issues_list-for-repo", "List repository issues", "Lists the open issues of a repository."),
	plugin("repos_delete", "Delete a repository", "Deleting a repository requires admin access.",
		func(p *plugins.Plugin) { p.Execution.Method = "DELETE" }),
	plugin("repos_update", "Update a repository", "Changes the settings of a repository.", func(p *plugins.Plugin) {
		p.Execution.Method = "PATCH"
		p.Parameters = json.RawMessage(`{"type":"object","properties":{"has_wiki":{"type":"boolean","description":"Either true to enable the wiki or false to disable it."},"private":{"type":"boolean"}}}`)
	}),
	plugin("crm_contact_merge", "Merge two contacts", "Combines two records.",
		func(p *plugins.Plugin) { p.Keywords = []string{"dedupe", "deduplicate"} }),
	plugin("billing_invoice_get", "Get an invoice", "Returns one invoice.",
		func(p *plugins.Plugin) { p.Tags = []string{"accounting"} }),
	plugin("list_3", "获取部门列表", "查询组织机构中的部门", func(p *plugins.Plugin) { p.Tags = []string{"部门管理"} }),
	plugin("remove_3", "删除部门", "删除部门，存在下级部门时不允许删除", func(p *plugins.Plugin) { p.Tags = []string{"部门管理"} }),
	plugin("changeStatus", "状态修改", "启用或停用", func(p *plugins.Plugin) { p.Tags = []string{"用户管理"} }),
	plugin("changeStatus_1", "状态修改", "启用或停用", func(p *plugins.Plugin) { p.Tags = []string{"角色管理"} }),
	plugin("disabled_tool", "Delete everything", "Never found.", func(p *plugins.Plugin) { p.Status = plugins.StatusDisabled }),
}

func TestSearch(t *testing.T) {
	ix, err := New(catalog)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != len(catalog)-1 {
		t.Errorf("Len = %d: the disabled plugin must be left out", ix.Len())
	}
	for _, tc := range []struct{ q, want string }{
		{"open a new issue", "issues_create"},
		{"which issues are open in the repo", "issues_list-for-repo"},
		{"remove the repo", "repos_delete"},             // a synonym, an abbreviation
		{"turn off the wiki", "repos_update"},           // a phrase; a parameter's name
		{"dedupe my contacts", "crm_contact_merge"},     // an administrator's keyword
		{"accounting documents", "billing_invoice_get"}, // a tag
		{"撤销一个部门", "remove_3"},                          // Chinese, a synonym
		{"查看部门", "list_3"},
		{"停用用户", "changeStatus"}, // the tag tells the two apart
		{"停用角色", "changeStatus_1"},
		{"Delete a department 部门", "remove_3"}, // mixed languages
	} {
		rs := ix.Search(tc.q, 3)
		if len(rs) == 0 || rs[0].Name != tc.want {
			t.Errorf("Search(%q) = %v, want %s first", tc.q, names(rs), tc.want)
		}
	}
	if rs := ix.Search("everything", 5); len(rs) != 0 {
		t.Errorf("a disabled plugin was found: %v", names(rs))
	}
	if rs := ix.Search("the of and", 5); len(rs) != 0 {
		t.Errorf("stop words alone found %v", names(rs))
	}
	if rs := ix.Search("repository", 2); len(rs) != 2 || rs[0].Score < rs[1].Score {
		t.Errorf("limit or order broken: %v", rs)
	}
}

// TestRank: the pages of a search are the prefix of one ranking, past
// MaxLimit, with the number of matches.
func TestRank(t *testing.T) {
	ix := widgets(t)
	all, total := ix.Rank("widgets", 0)
	if total != 2*MaxLimit+7 || len(all) != total {
		t.Fatalf("Rank(widgets, 0) = %d results of %d, want %d", len(all), total, 2*MaxLimit+7)
	}
	first, n := ix.Rank("widgets", 60)
	if n != total || !slices.Equal(names(first), names(all[:60])) {
		t.Errorf("Rank(widgets, 60) is not the ranking's first 60 (total %d)", n)
	}
	if s := ix.Search("widgets", 1000); !slices.Equal(names(s), names(all[:MaxLimit])) {
		t.Errorf("Search is not capped at MaxLimit of the same ranking: %d results", len(s))
	}
	if rs, n := ix.Rank("nothing matches", 10); len(rs) != 0 || n != 0 {
		t.Errorf("Rank of an unknown word = %v, %d", names(rs), n)
	}
}

// widgets indexes 2·MaxLimit+7 tools matching "widgets", in several
// scores, and one that does not.
func widgets(t *testing.T) *Index {
	t.Helper()
	var ps []*plugins.Plugin
	for i := range 2*MaxLimit + 7 {
		ps = append(ps, &plugins.Plugin{Name: fmt.Sprintf("widget_%03d", i), Description: "Lists widgets" + strings.Repeat(" widgets", i%5)})
	}
	ps = append(ps, &plugins.Plugin{Name: "gadget", Description: "A gadget"})
	ix, err := New(ps)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func names(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// TestLiveConcurrent: searches run while the catalog is rebuilt (go test
// -race checks the swap), and At builds once per version.
func TestLiveConcurrent(t *testing.T) {
	var l Live
	ctx := context.Background()
	if rs := l.Search("issue", 5); len(rs) != 0 {
		t.Fatalf("an empty Live found %v", names(rs))
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				l.Search("create issue", 3)
				if _, err := l.At(ctx, int64(1+i%2), catalog); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	ix, _ := l.At(ctx, 3, catalog[:1])
	if ix.Len() != 1 || l.Version() != 3 {
		t.Fatalf("At(3) = %d tools, version %d", ix.Len(), l.Version())
	}
	if again, _ := l.At(ctx, 3, catalog); again != ix {
		t.Fatal("At rebuilt an index of the version it holds")
	}
	if err := l.Rebuild(ctx, catalog); err != nil || l.Current().Len() != len(catalog)-1 {
		t.Fatalf("Rebuild: %v, %d tools", err, l.Current().Len())
	}
}

func TestFuse(t *testing.T) {
	kw := []Result{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	sem := []Result{{Name: "c"}, {Name: "d"}, {Name: "a"}}
	got := names(Fuse(3, kw, sem))
	// a: 1/61+1/63, c: 1/63+1/61 (tie: by name), then b (1/62) over d (1/62 by name).
	if want := []string{"a", "c", "b"}; !slices.Equal(got, want) {
		t.Fatalf("Fuse = %v, want %v", got, want)
	}
	if got := Fuse(5, nil, sem); len(got) != 3 || got[0].Name != "c" {
		t.Fatalf("Fuse with one list = %v", names(got))
	}
}

// method sets a test plugin's method and path.
func method(m, path string) func(*plugins.Plugin) {
	return func(p *plugins.Plugin) { p.Execution.Method, p.Execution.BaseURL = m, "https://api.example.com"+path }
}

func TestActions(t *testing.T) {
	a := func(verbs ...string) actions {
		var out actions
		for _, v := range verbs {
			out |= actionIndex[v]
		}
		return out
	}
	for _, tc := range []struct {
		p    *plugins.Plugin
		want actions
	}{
		{plugin("repos_delete", "Delete a repository", "", method("DELETE", "/repos/{owner}/{repo}")), a("delete")},
		{plugin("issues_list-for-repo", "List repository issues", "", method("GET", "/repos/{owner}/{repo}/issues")), a("list")},
		{plugin("repos_get", "Get a repository", "", method("GET", "/repos/{owner}/{repo}")), a("get")},
		// the title's first word: "Test" is no action; the method says create
		{plugin("repos_test-push-webhook", "Test the push repository webhook", "", method("POST", "/repos/{owner}/{repo}/hooks/{id}/tests")), a("create")},
		// no verb in the title: the name's
		{plugin("removeUser", "User", "", method("POST", "/users/remove")), a("delete", "create")},
		{plugin("list_3", "获取部门列表", "", method("GET", "/system/dept/list")), a("get", "list")},
		{plugin("changeStatus", "状态修改", "", method("PUT", "/system/user/changeStatus")), a("update")},
	} {
		if got := toolActions(tc.p, tc.p.Title); got != tc.want {
			t.Errorf("toolActions(%s) = %b, want %b", tc.p.Name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		q    string
		want actions
	}{
		{"Removing the label", a("delete")},
		{"show them", a("get", "list")},
		{"turn off the wiki", a("disable")},
		{"帮我删掉这个部门", a("delete")},
		{"the wiki", 0},
		// a verb the vocabulary does not know makes or changes something
		{"comment on issue 10", a("create", "update")},
		{"star the repo", a("create", "update")},
		{"who starred the repo", a("list")},
		{"accounting documents", 0}, // no function word after: a noun
		{"wiki", 0},
	} {
		if got := queryActions(tc.q); got != tc.want {
			t.Errorf("queryActions(%q) = %b, want %b", tc.q, got, tc.want)
		}
	}
	// A rare word of the request that a tool of another action shares
	// does not outweigh the action.
	ix, _ := New([]*plugins.Plugin{
		plugin("repos_delete", "Delete a repository", "Deleting a repository requires admin access.", method("DELETE", "/repos/{owner}/{repo}")),
		plugin("repos_test-push-webhook", "Test the push repository webhook", "Triggers a push event.", method("POST", "/repos/{owner}/{repo}/hooks/{id}/tests")),
		plugin("issues_create", "Create an issue", "Opens a new issue in a repository.", method("POST", "/repos/{owner}/{repo}/issues")),
		plugin("issues_list", "List issues", "Lists the issues of a repository.", method("GET", "/repos/{owner}/{repo}/issues")),
		plugin("issues_delete-label", "Delete a label", "Deletes a label.", method("DELETE", "/repos/{owner}/{repo}/labels/{name}")),
		plugin("repos_get", "Get a repository", "Returns a repository.", method("GET", "/repos/{owner}/{repo}")),
		plugin("issues_get-label", "Get a label", "Returns a label.", method("GET", "/repos/{owner}/{repo}/labels/{name}")),
	})
	if rs := ix.Search("delete the old test repository", 2); len(rs) == 0 || rs[0].Name != "repos_delete" {
		t.Errorf("delete the old test repository: %v", names(rs))
	}
}

// TestTitleCoverage: a request that says a tool's title in full finds it
// before a tool sharing a rarer word, though "repository" is everywhere.
func TestTitleCoverage(t *testing.T) {
	post := func(path string) func(*plugins.Plugin) { return method("POST", path) }
	ix, _ := New([]*plugins.Plugin{
		plugin("repos_create", "Create a repository", "Creates a new repository; it may be private.", post("/user/repos")),
		plugin("private-registries_create", "Create a private registry for an organization", "Creates a private registry configuration with an encrypted value.", post("/orgs/{org}/private-registries")),
		plugin("repos_create-fork", "Create a fork", "Creates a fork of a repository.", post("/repos/{owner}/{repo}/forks")),
		plugin("repos_create-webhook", "Create a repository webhook", "Creates a webhook of a repository.", post("/repos/{owner}/{repo}/hooks")),
		plugin("issues_create", "Create an issue", "Creates an issue in a repository.", post("/repos/{owner}/{repo}/issues")),
		plugin("repos_get", "Get a repository", "Returns a repository.", method("GET", "/repos/{owner}/{repo}")),
	})
	if rs := ix.Search("create a private repo", 2); len(rs) == 0 || rs[0].Name != "repos_create" {
		t.Errorf("create a private repo: %v", names(rs))
	}
}

func TestDeprecatedLast(t *testing.T) {
	ix, _ := New([]*plugins.Plugin{
		plugin("a_add-member-legacy", "Add team member (Legacy)", "Adds a member to a team.", method("PUT", "/teams/{id}/members/{username}")),
		plugin("b_add-membership", "Add team membership", "Adds a member to a team.", method("PUT", "/orgs/{org}/teams/{slug}/memberships/{username}")),
		plugin("c_add-member-old", "Add team member", "Deprecated: the API may remove this operation.\n\nAdds a member to a team.", method("PUT", "/teams/{id}/members/{username}")),
	})
	if rs := ix.Search("add a member to the team", 3); len(rs) != 3 || rs[0].Name != "b_add-membership" {
		t.Errorf("add a member to the team: %v", names(rs))
	}
}

// TestWiden: a request's word also matches the catalog's words that
// extend it by a letter or two, which Porter2 leaves apart.
func TestWiden(t *testing.T) {
	ix, _ := New([]*plugins.Plugin{
		plugin("a", "Create a registration token", "For a runner."),
		plugin("b", "Get the committers", "Of a commit."),
	})
	concepts := ix.an.analyzeQuery("the commit")
	ix.widen(concepts)
	if got, want := fmt.Sprint(concepts), "[[{commit 1} {committ 0.5}]]"; got != want {
		t.Errorf("widen = %s, want %s", got, want)
	}
}

func TestAddressed(t *testing.T) {
	p := plugin("issues_list-comments", "List issue comments", "", method("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"))
	if got := fmt.Sprint(addressedTerms(analyzer{}, p)); got != "[repo issu]" {
		t.Errorf("addressedTerms = %s", got)
	}
	if got := fmt.Sprint(numberedTerms(analyzer{}, "the discussion on issue 10, and PR #9 of 2 repos")); got != "[issu pr]" {
		t.Errorf("numberedTerms = %s", got)
	}
}

// TestTypos: a word of five letters or more one edit from a catalog word
// finds its tools, below the word itself; shorter words do not.
func TestTypos(t *testing.T) {
	ps := []*plugins.Plugin{
		{Name: "create_refund", Title: "Create a refund", Description: "Refunds a charge.", Status: plugins.StatusEnabled},
		{Name: "cancel_subscription", Title: "Cancel a subscription", Description: "Cancels it.", Status: plugins.StatusEnabled},
		{Name: "get_customer", Title: "Retrieve a customer", Description: "A customer.", Status: plugins.StatusEnabled},
		{Name: "add_tag", Title: "Add a tag", Description: "Tags an item.", Status: plugins.StatusEnabled},
	}
	ix, err := New(ps)
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"refnud the charge":     "create_refund", // swapped
		"cancle my subscripton": "cancel_subscription",
		"look up the custmer":   "get_customer",  // dropped
		"retrieve a customerr":  "get_customer",  // added
		"refumd":                "create_refund", // changed
	} {
		rs := ix.Search(q, 5)
		if len(rs) == 0 || rs[0].Name != want {
			t.Errorf("%q: got %v, want %s first", q, rs, want)
		}
	}
	if rs := ix.Search("tap", 5); len(rs) != 0 {
		t.Errorf("a three-letter word matched by one edit: %v", rs)
	}
	exact := ix.Search("refund", 1)[0].Score
	if typo := ix.Search("refnud", 1)[0].Score; typo >= exact {
		t.Errorf("a mistyped word scores %v, the word itself %v: want lower", typo, exact)
	}
}

// englishTools and chineseTools are two tools of each language.
func englishTools() []*plugins.Plugin {
	return []*plugins.Plugin{
		{Name: "delete_user", Title: "Delete a user", Description: "Deletes the user.", Status: plugins.StatusEnabled},
		{Name: "list_users", Title: "List users", Description: "Lists every user.", Status: plugins.StatusEnabled},
	}
}

func chineseTools() []*plugins.Plugin {
	return []*plugins.Plugin{
		{Name: "del_kehu", Title: "删除客户", Description: "删除一个客户", Status: plugins.StatusEnabled},
		{Name: "list_kehu", Title: "获得客户分页", Description: "分页查询客户", Status: plugins.StatusEnabled},
	}
}

// TestLanguages: the index names the languages of its tools' text, and,
// without the dictionary, a request in a language none of them is written
// in finds nothing (not the tools its verbs' English synonyms match); with
// it (TestAcrossLanguages), Chinese finds English tools and English
// Chinese ones.
func TestLanguages(t *testing.T) {
	en, zh := englishTools(), chineseTools()
	for _, tc := range []struct {
		ps    []*plugins.Plugin
		langs []string
		found map[string]bool // request: finds something
	}{
		{en, []string{"English"}, map[string]bool{"删除用户": false, "delete the user": true, "frobnicate": false}},
		{zh, []string{"Chinese"}, map[string]bool{"删除客户": true, "delete the user": false}},
		{append(append([]*plugins.Plugin{}, en...), zh...), []string{"English", "Chinese"}, map[string]bool{"删除客户": true, "remove a user": true}},
	} {
		ix, err := NewWith(tc.ps, Parts{Sources: true, Lexicon: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := ix.Languages(); !slices.Equal(got, tc.langs) {
			t.Errorf("Languages() = %v, want %v", got, tc.langs)
		}
		for q, want := range tc.found {
			if rs := ix.Search(q, 5); (len(rs) > 0) != want {
				t.Errorf("%v: %q found %v, want something: %v", tc.langs, q, rs, want)
			}
		}
	}
}

func TestOneEdit(t *testing.T) {
	seen := map[string]bool{}
	oneEdit("abc", func(b []byte) { seen[string(b)] = true })
	for _, w := range []string{"bc", "ac", "ab", "bac", "acb", "xbc", "abz", "zabc", "abcz", "azbc"} {
		if !seen[w] {
			t.Errorf("%q is one edit from abc, not generated", w)
		}
	}
	for _, w := range []string{"abc", "cba", "a", "abcde"} {
		if seen[w] {
			t.Errorf("%q generated", w)
		}
	}
}

// TestRankUsable: a filtered search ranks only what the filter keeps —
// the same order as the whole ranking narrowed afterwards, the total
// counting the usable matches, pages as prefixes of it — asks the
// filter once (Keep with the matches only, Set with the index's list),
// and a filter's error refuses the search and leaves no score behind
// for the next; both forms of a filter rank alike.
func TestRankUsable(t *testing.T) {
	ix := widgets(t)
	all, matches := ix.Rank("widgets", 0)
	even := func(p *plugins.Plugin) bool { return p.Name[len(p.Name)-1]%2 == 0 }
	var asked []int
	keepEven := func(ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
		asked = append(asked, len(ps))
		var out []*plugins.Plugin
		for _, p := range ps {
			if even(p) {
				out = append(out, p)
			}
		}
		return out, nil
	}
	var want []string
	for _, r := range all {
		if even(r.Plugin) {
			want = append(want, r.Name)
		}
	}
	refuse := errors.New("permissions unreadable")
	for _, form := range []struct {
		name              string
		even, all, failed *Filter
		asked             int // the tools the filter is asked about
	}{
		{"keep", &Filter{Keep: keepEven}, &Filter{Keep: func(ps []*plugins.Plugin) ([]*plugins.Plugin, error) { return ps, nil }},
			&Filter{Keep: func([]*plugins.Plugin) ([]*plugins.Plugin, error) { return nil, refuse }}, matches},
		{"set", &Filter{Set: func(docs []*plugins.Plugin) (Set, error) {
			asked = append(asked, len(docs))
			return positionsOf(docs, even), nil
		}}, &Filter{Set: func(docs []*plugins.Plugin) (Set, error) {
			return positionsOf(docs, func(*plugins.Plugin) bool { return true }), nil
		}},
			&Filter{Set: func([]*plugins.Plugin) (Set, error) { return nil, refuse }}, len(ix.docs)},
	} {
		for _, tc := range []struct {
			name string
			n    int
			want []string
		}{
			{"every usable match", 0, want},
			{"a page", 10, want[:10]},
			{"past MaxLimit", MaxLimit + 2, want[:MaxLimit+2]},
			{"more than there are", 1000, want},
		} {
			t.Run(form.name+"/"+tc.name, func(t *testing.T) {
				asked = nil
				rs, total, err := ix.RankUsable("widgets", tc.n, form.even)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(names(rs), tc.want) || total != len(want) {
					t.Errorf("RankUsable(widgets, %d) = %d results of %d, want the narrowed ranking's first %d of %d", tc.n, len(rs), total, len(tc.want), len(want))
				}
				if !slices.Equal(asked, []int{form.asked}) {
					t.Errorf("the filter was asked about %v tools, want once about %d", asked, form.asked)
				}
			})
		}
		if rs, total, err := ix.RankUsable("widgets", 20, form.all); err != nil || total != matches || !slices.Equal(names(rs), names(all[:20])) {
			t.Errorf("%s: a filter keeping every match changes the ranking: %v, %d, %v", form.name, names(rs), total, err)
		}
		if rs, total, err := ix.RankUsable("widgets", 5, form.failed); !errors.Is(err, refuse) || rs != nil || total != 0 {
			t.Errorf("%s: a failing filter answered %v, %d, %v", form.name, names(rs), total, err)
		}
		if again, n := ix.Rank("widgets", 0); n != matches || !slices.Equal(names(again), names(all)) || again[0].Score != all[0].Score {
			t.Errorf("%s: a refused search left scores behind: the next ranks %d of %d, first score %v want %v", form.name, len(again), n, again[0].Score, all[0].Score)
		}
	}
}

// positions is a Set of the positions it maps to true.
type positions map[int]bool

func (p positions) Has(i int) bool { return p[i] }

// positionsOf is the positions of docs keep keeps.
func positionsOf(docs []*plugins.Plugin, keep func(*plugins.Plugin) bool) positions {
	s := positions{}
	for i, p := range docs {
		s[i] = keep(p)
	}
	return s
}

// TestLanguagesWithin: the languages of the tools a filter keeps, by its
// Keep or its Set, are those of the kept tools only: a caller who may use
// the English tools is not told of Chinese ones; nil keeps every one.
func TestLanguagesWithin(t *testing.T) {
	ix, err := New(append(englishTools(), chineseTools()...))
	if err != nil {
		t.Fatal(err)
	}
	english := func(p *plugins.Plugin) bool { return strings.Contains(p.Name, "user") }
	byKeep := func(keep func(*plugins.Plugin) bool) *Filter {
		return &Filter{Keep: func(ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
			return slices.DeleteFunc(slices.Clone(ps), func(p *plugins.Plugin) bool { return !keep(p) }), nil
		}}
	}
	bySet := func(keep func(*plugins.Plugin) bool) *Filter {
		return &Filter{Set: func(all []*plugins.Plugin) (Set, error) { return positionsOf(all, keep), nil }}
	}
	for _, tc := range []struct {
		name   string
		usable *Filter
		want   []string
	}{
		{"nil", nil, []string{"English", "Chinese"}},
		{"every one kept", byKeep(func(*plugins.Plugin) bool { return true }), []string{"English", "Chinese"}},
		{"English kept", byKeep(english), []string{"English"}},
		{"English by set", bySet(english), []string{"English"}},
		{"Chinese by set", bySet(func(p *plugins.Plugin) bool { return !english(p) }), []string{"Chinese"}},
		{"none kept", byKeep(func(*plugins.Plugin) bool { return false }), []string{}},
	} {
		got, err := ix.LanguagesWithin(tc.usable)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := ix.LanguagesWithin(&Filter{Keep: func([]*plugins.Plugin) ([]*plugins.Plugin, error) { return nil, errors.New("down") }}); err == nil {
		t.Error("a filter failing: no error")
	}
}

// BenchmarkRankUsable is a per-user search of 2,000 tools against the
// plain one: the first page ranked within the filter (half the tools
// usable, or all), and the whole ranking filtered afterwards, as search
// did before the filter moved into the index (issue 46 point 6).
func BenchmarkRankUsable(b *testing.B) {
	verbs := []string{"list", "create", "delete", "export", "update"}
	nouns := []string{"invoices", "orders", "users", "reports", "suppliers", "customers", "products", "roles", "menus", "notices"}
	var ps []*plugins.Plugin
	for i := range 2000 {
		v, n := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		ps = append(ps, &plugins.Plugin{Name: fmt.Sprintf("m%d_%s_%s_%d", i%50, v, n, i), Title: v + " " + n,
			Description: fmt.Sprintf("%s the %s of module %d", v, n, i%50)})
	}
	ix, err := New(ps)
	if err != nil {
		b.Fatal(err)
	}
	keep := func(half bool) *Filter {
		return &Filter{Keep: func(ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
			out := make([]*plugins.Plugin, 0, len(ps))
			for i, p := range ps {
				if !half || i%2 == 0 {
					out = append(out, p)
				}
			}
			return out, nil
		}}
	}
	half := positionsOf(ix.docs, func(p *plugins.Plugin) bool { return p.Name[len(p.Name)-1]%2 == 0 })
	bySet := &Filter{Set: func([]*plugins.Plugin) (Set, error) { return half, nil }}
	queries := []string{"list the invoices of a customer", "create an order", "delete a user", "export the monthly report", "update a supplier"}
	for _, bc := range []struct {
		name   string
		search func(q string)
	}{
		{"plain", func(q string) { ix.Rank(q, DefaultLimit) }},
		{"within all", func(q string) { _, _, _ = ix.RankUsable(q, DefaultLimit, keep(false)) }},
		{"within half", func(q string) { _, _, _ = ix.RankUsable(q, DefaultLimit, keep(true)) }},
		{"within half, by set", func(q string) { _, _, _ = ix.RankUsable(q, DefaultLimit, bySet) }},
		{"every match then filter", func(q string) {
			rs, _ := ix.Rank(q, 0)
			ps := make([]*plugins.Plugin, len(rs))
			for i := range rs {
				ps[i] = rs[i].Plugin
			}
			_, _ = keep(false).Keep(ps)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				bc.search(queries[i%len(queries)])
				i++
			}
		})
	}
}
