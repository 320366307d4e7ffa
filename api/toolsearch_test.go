package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// tool is a minimal plugin document for the search tests.
func tool(name, title, description, extra string) string {
	return fmt.Sprintf(`{"name": %q, "title": %q, "description": %q, %s
		"parameters": {"type": "object", "properties": {"owner": {"type": "string"}}},
		"execution": {"method": "GET", "base_url": "https://api.example.com/x"}}`, name, title, description, extra)
}

// TestToolSearchRoute: GET /v1/tools/search ranks the enabled catalog for
// any token, in English and Chinese and by an administrator's keywords;
// follows the catalog when the change counter moves (also for a change
// made with plain SQL); counts the searches that find nothing.
func TestToolSearchRoute(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		changes := store.NewWatcher(st, time.Hour, nil) // polled by hand below
		e := newEnv(t, st, func(s *api.Server) { s.Changes = changes })
		changes.Poll(ctx)
		for _, doc := range []string{
			tool("issues_create", "Create an issue", "Opens a new issue in a repository.", ""),
			tool("repos_delete", "Delete a repository", "Deleting a repository requires admin access.", ""),
			tool("repos_list-for-org", "List organization repositories", "Lists repositories for the specified organization.", ""),
			tool("system_user_add", "新增用户", "创建一个新的系统用户，校验登录账号唯一", ""),
			tool("crm_contact_merge", "Merge two contacts", "Combines duplicate records.", `"keywords": ["dedupe", "deduplicate"],`),
		} {
			if code, out := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
				t.Fatalf("create: %d %v", code, out)
			}
		}
		code, created := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "t"})
		if code != http.StatusCreated {
			t.Fatalf("create token: %d %v", code, created)
		}
		userTok := created["token"].(string)

		first := func(q string) string {
			t.Helper()
			code, out := e.do("GET", "/v1/tools/search?limit=2&q="+strings.ReplaceAll(q, " ", "+"), userTok, nil)
			if code != http.StatusOK {
				t.Fatalf("search %q: %d %v", q, code, out)
			}
			if _, ok := out["took_ms"].(float64); !ok {
				t.Errorf("search %q: no took_ms in %v", q, out)
			}
			rs, _ := out["results"].([]any)
			if len(rs) > 2 {
				t.Errorf("search %q: %d results past limit 2", q, len(rs))
			}
			if len(rs) == 0 {
				return ""
			}
			r := rs[0].(map[string]any)
			fn, _ := r["tool"].(map[string]any)["function"].(map[string]any)
			if fn["name"] != r["name"] || r["score"].(float64) <= 0 {
				t.Errorf("search %q: result %v: tool or score wrong", q, r)
			}
			return r["name"].(string)
		}
		for q, want := range map[string]string{
			"remove the old repo":       "repos_delete",
			"open a new issue":          "issues_create",
			"which repos does acme own": "repos_list-for-org",
			"添加一个用户":                    "system_user_add",
			"dedupe my contacts":        "crm_contact_merge",
			"zzzz qqqq":                 "",
		} {
			if got := first(q); got != want {
				t.Errorf("search %q: first %q, want %q", q, got, want)
			}
		}

		// Behind the engine's back: the index follows the counter.
		if _, err := st.DB().ExecContext(ctx, "UPDATE sys_ai_plugin SET status = '1' WHERE name = 'repos_delete'"); err != nil {
			t.Fatal(err)
		}
		changes.Poll(ctx)
		if got := first("delete repository"); got == "repos_delete" {
			t.Error("a plugin disabled by SQL is still found after the poll")
		}

		for _, path := range []string{"/v1/tools/search", "/v1/tools/search?q=x&limit=0", "/v1/tools/search?q=x&limit=many"} {
			if code, out := e.do("GET", path, userTok, nil); code != http.StatusBadRequest {
				t.Errorf("%s: %d %v, want 400", path, code, out)
			}
		}
		if code, _ := e.do("GET", "/v1/tools/search?q=issue", "", nil); code != http.StatusUnauthorized {
			t.Errorf("search without a token: %d", code)
		}

		// GET /v1/tools takes q and limit too.
		code, out := e.do("GET", "/v1/tools?q=create+issue&limit=1", userTok, nil)
		if ts, _ := out["tools"].([]any); code != 200 || len(ts) != 1 || !strings.Contains(fmt.Sprint(ts[0]), "issues_create") {
			t.Errorf("GET /v1/tools?q=: %d %v", code, out)
		}

		req, _ := http.NewRequest("GET", e.url+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(metrics), `blindexec_tool_searches_total{result="empty"} 1`) {
			t.Errorf("the empty search is not counted:\n%s", grepLines(string(metrics), "tool_searches"))
		}
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestToolSearchPagedPerUser (issue 46 point 6): a user's search ranks
// within the user's tools: every page full of them, the total counting
// them, the pages slices of the catalog's ranking narrowed to them.
func TestToolSearchPagedPerUser(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), func(s *api.Server) {
		checker := &access.Checker{} // open: a plugin with perms needs a string user 7 does not hold
		s.Executor.Access, s.Access = checker, checker
	})
	for i := range 24 {
		perms := ""
		if i%2 == 1 {
			perms = `"perms": ["widgets:odd:list"],`
		}
		if code, out := e.do("POST", "/v1/plugins", adminToken, tool(fmt.Sprintf("widget_%02d", i), "List widgets",
			"Lists widgets"+strings.Repeat(" widgets", i%5), perms)); code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, out)
		}
	}
	user, _, err := api.IssueToken(t.Context(), e.st, 7, "paged", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	search := func(token, query string) ([]string, float64) {
		names, out := searchNames(t, e, token, "widgets"+query)
		return names, out["total"].(float64)
	}
	all, total := search(adminToken, "&limit=50")
	if total != 24 {
		t.Fatalf("the catalog's ranking: %v, total %v", all, total)
	}
	want := slices.DeleteFunc(all, func(n string) bool { return (n[len(n)-1]-'0')%2 == 1 })
	var paged []string
	for off := 0; off < 12; off += 5 {
		names, total := search(user, fmt.Sprintf("&limit=5&offset=%d", off))
		if total != 12 || len(names) != min(5, 12-off) {
			t.Errorf("offset %d: %d results of %v, want a full page of the user's 12", off, len(names), total)
		}
		paged = append(paged, names...)
	}
	if !slices.Equal(paged, want) {
		t.Errorf("the user's pages %v are not the catalog's ranking narrowed to its tools %v", paged, want)
	}
}

// searchNames are the names GET /v1/tools/search?q= answers, and the
// answer.
func searchNames(t *testing.T, e *env, token, q string) ([]string, map[string]any) {
	t.Helper()
	code, out := e.do("GET", "/v1/tools/search?q="+q, token, nil)
	if code != http.StatusOK {
		t.Fatalf("search %s: %d %v", q, code, out)
	}
	var names []string
	for _, r := range out["results"].([]any) {
		names = append(names, r.(map[string]any)["name"].(string))
	}
	return names, out
}
