package toolsearch

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blindexec/blindexec/plugins"
)

// FuzzRank: whatever a person or a model searches for (GET
// /v1/tools/search, search_tools; at most DefaultMaxQueryChars
// characters, as CheckQuery holds them), ranking never panics, and a
// page of n is the first n of the one ranking (best first, ties by name),
// counted by the same total, each tool of the catalog at most once.
func FuzzRank(f *testing.F) {
	for _, s := range []string{
		"list open pull requests", "删除用户", "getUserInfo repos_list-for-org", "turn off the wiki",
		"ユーザー削除 사용자 삭제", "reopn isue", `add a label "good first issue" to #3`, "\xff\xfe 42 v2 HTTPServer",
		strings.Repeat("a", 300), strings.Repeat("用户", 40),
	} {
		f.Add(s, uint8(5))
	}
	ix, err := New([]*plugins.Plugin{
		tool("repos_list_for_org", "List organization repositories", "Lists repositories for the specified organization."),
		tool("issues_create", "Create an issue", "Opens a new issue in a repository; assign it, label it."),
		tool("pulls_list", "List pull requests", "Lists open or closed pull requests (PRs)."),
		tool("user_delete", "删除用户", "删除一个系统用户（停用账号）"),
		tool("wiki_disable", "Disable the wiki", "Turns off a repository's wiki."),
		tool("order_query", "查询订单", "按订单号查询订单详情 order lookup"),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, query string, n uint8) {
		if utf8.RuneCountInString(query) > DefaultMaxQueryChars {
			return // refused before a search (CheckQuery)
		}
		all, total := ix.Rank(query, 0)
		if len(all) != total || total > 6 {
			t.Fatalf("%q: %d ranked of %d matching, in a catalog of 6", query, len(all), total)
		}
		seen := map[string]bool{}
		for i, r := range all {
			if seen[r.Name] || r.Plugin == nil || r.Plugin.Name != r.Name || math.IsNaN(r.Score) || math.IsInf(r.Score, 0) {
				t.Fatalf("%q: result %d: %+v", query, i, r)
			}
			seen[r.Name] = true
			if i > 0 && (r.Score > all[i-1].Score || r.Score == all[i-1].Score && r.Name < all[i-1].Name) {
				t.Fatalf("%q: %s (%g) ranked after %s (%g)", query, r.Name, r.Score, all[i-1].Name, all[i-1].Score)
			}
		}
		k := int(n)%MaxLimit + 1
		page, pageTotal := ix.Rank(query, k)
		if pageTotal != total || len(page) != min(k, total) {
			t.Fatalf("%q: a page of %d: %d results of %d, the whole ranking %d", query, k, len(page), pageTotal, total)
		}
		for i := range page {
			if page[i].Name != all[i].Name || page[i].Score != all[i].Score {
				t.Fatalf("%q: a page of %d, result %d: %s (%g); the whole ranking's %s (%g)", query, k, i, page[i].Name, page[i].Score, all[i].Name, all[i].Score)
			}
		}
	})
}
