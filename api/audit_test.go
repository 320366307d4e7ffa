package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestAuditRoute: GET /v1/audit is the administrator's, paged by cursor,
// each row in words in the language asked for; a row written before
// words existed reads as its method and path.
func TestAuditRoute(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		for i, d := range []store.AdminDetail{
			{},
			api.Detail(api.OpQuotaRuleAdded, "name", "daily-deletes", "limit", "10", "window", "day", "applies", "consequential"),
			api.Detail(api.OpProviderDeleted, "name", "github"),
		} {
			ev := &store.AdminEvent{Actor: "admin", Via: "api", Action: "POST", Kind: "quota_rule", Target: "/v1/quotas/rules", HTTPStatus: 201}
			if i > 0 {
				ev.SetDetail(d)
			}
			if err := st.InsertAdminEvent(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
		code, body := e.do("GET", "/v1/audit?limit=2", adminToken, nil)
		events, _ := body["events"].([]any)
		if code != http.StatusOK || len(events) != 2 || body["next"] == nil {
			t.Fatalf("first page: %d %v", code, body)
		}
		if s := events[0].(map[string]any)["summary"]; s != "OAuth provider “github” deleted, with every user's connection to it" {
			t.Errorf("summary %q", s)
		}
		code, body = e.do("GET", "/v1/audit?limit=2&cursor="+body["next"].(string), adminToken, nil)
		events, _ = body["events"].([]any)
		if code != http.StatusOK || len(events) != 1 || body["next"] != nil || events[0].(map[string]any)["summary"] != "POST /v1/quotas/rules" {
			t.Fatalf("last page: %d %v", code, body)
		}
		for _, q := range []string{"limit=0", "limit=x", "cursor=abc"} {
			if code, body := e.do("GET", "/v1/audit?"+q, adminToken, nil); code != http.StatusBadRequest {
				t.Errorf("%s: %d %v", q, code, body)
			}
		}
		if code, _ := e.do("GET", "/v1/audit", serviceToken, nil); code != http.StatusForbidden {
			t.Errorf("the service's token: %d, want 403", code)
		}
		code, h, body := api.DoJSONHeader(t, e.url, "GET", "/v1/audit?limit=1", adminToken, nil, "Accept-Language", "zh-CN")
		events, _ = body["events"].([]any)
		if code != http.StatusOK || h.Get("Content-Language") != "zh-CN" || len(events) != 1 ||
			events[0].(map[string]any)["summary"] != "OAuth 提供方“github”已删除，所有用户与它的连接随之删除" || events[0].(map[string]any)["who"] != "管理员" {
			t.Errorf("in Chinese: %d %v", code, body)
		}
	})
}

func TestSummaries(t *testing.T) {
	// Every op is said in both languages, every argument filled.
	for _, lang := range []string{api.LangEN, api.LangZH} {
		ev := &store.AdminEvent{Actor: "user 7"}
		ev.SetDetail(api.Detail(api.OpDecided, "tool", "DeleteCustomersCustomer", "user", "7", "outcome", "approved", "by", "user 7", "reason", "I asked for it"))
		got := api.Summary(lang, ev)
		if strings.ContainsAny(got, "{}[]") || !strings.Contains(got, "DeleteCustomersCustomer") {
			t.Errorf("%s: %q", lang, got)
		}
		if lang == api.LangEN && got != "call “DeleteCustomersCustomer” for user 7 approved by user 7: I asked for it" {
			t.Errorf("%q", got)
		}
		// An answer to an upstream's question, by each route; the run
		// and user said when known.
		for _, tc := range []struct {
			args   []string
			en, zh string
		}{
			{[]string{"route", "page", "user", "7"},
				"question of the MCP server “shop” during the call “order_shirt” for user 7 answered by user 7 on the approval page",
				"用户 7 的调用“order_shirt”中 MCP 服务“shop”的提问由用户 7在审批页回答"},
			{[]string{"route", "elicitation", "user", "7"},
				"question of the MCP server “shop” during the call “order_shirt” for user 7 answered by user 7 in their MCP client's session",
				"用户 7 的调用“order_shirt”中 MCP 服务“shop”的提问由用户 7在其 MCP 客户端会话中回答"},
			{[]string{"route", "input_required", "user", "7", "run", "run-1"},
				"question of the MCP server “shop” during the call “order_shirt” for user 7 in run run-1 answered by user 7 in their MCP client (input_required)",
				"用户 7 的调用“order_shirt”（运行 run-1）中 MCP 服务“shop”的提问由用户 7在其 MCP 客户端中（input_required）回答"},
		} {
			ev.SetDetail(api.Detail(api.OpAnswered, append([]string{"server", "shop", "tool", "order_shirt", "action", "accept", "by", "user 7"}, tc.args...)...))
			want := tc.en
			if lang == api.LangZH {
				want = tc.zh
			}
			if got := api.Summary(lang, ev); got != want {
				t.Errorf("%s: %q, want %q", lang, got, want)
			}
		}
	}
}
