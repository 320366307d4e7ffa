package console_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestAuditImports: an import is an administrative change when it
// applied something, streamed or not; a dry run and a failed import are
// not, though a streamed one's status is 200 whatever its end.
func TestAuditImports(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) { auditImports(t, newEnv(t, st, newMasterKey())) })
}

func auditImports(t *testing.T, e *env) {
	spec := func(title string) string {
		return `{"openapi": "3.0.3", "info": {"title": "` + title + `", "version": "1"}, "servers": [{"url": "https://api.example"}],
		  "paths": {"/a": {"get": {"operationId": "getA", "responses": {"200": {"description": "ok"}}}}}}`
	}
	imp := func(query, doc string, progress bool) {
		t.Helper()
		req, _ := http.NewRequest("POST", e.url+"/v1/plugins/import/openapi?"+query, strings.NewReader(doc))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/yaml")
		if progress {
			req.Header.Set("Accept", "application/x-ndjson")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("import %s: %d %s", query, resp.StatusCode, body)
		}
	}
	imp("dry_run=true&prefix=a", spec("A"), false)
	imp("dry_run=true&prefix=b", spec("B"), true)
	imp("prefix=c&base_url=ftp://nowhere", spec("C"), true) // fails once streaming
	imp("prefix=d", spec("D"), true)
	imp("prefix=e", spec("E"), false)
	events, err := e.st.ListAdminEvents(t.Context(), store.AdminEventFilter{Kind: "import"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Errorf("%d imports recorded, want the 2 applied: %+v", len(events), events)
	}
}

// TestAuditInWords (issue 51 point 4): every change is one row in words,
// its object and the values that are not secret, in the reader's
// language; a credential's value and a token never; GET /v1/audit pages
// and exports as JSON lines.
func TestAuditInWords(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, newMasterKey())
		bearer := func(method, path, body string, header ...string) (int, http.Header, []byte) {
			t.Helper()
			req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+adminToken)
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode/100 != 2 {
				t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
			}
			return resp.StatusCode, resp.Header, b
		}
		const secret = "sk-live-0123456789abcdefXYZ"
		bearer("POST", "/v1/quotas/rules", `{"name": "daily-deletes", "calls": 10, "window": "day", "consequential": true}`)
		bearer("POST", "/v1/quotas/rules", `{"name": "u7-minute", "user_id": 7, "calls": 3, "window": "minute", "plugins": ["lookup"]}`)
		bearer("POST", "/v1/plugins", `{"name": "lookup", "description": "d", "parameters": {"type": "object"},
			"execution": {"method": "GET", "base_url": "https://api.example/lookup"}, "auth_config": {"type": "bearer", "token": "API_KEY"}}`)
		bearer("POST", "/v1/plugins/consequential", `{"names": ["lookup"], "consequential": true}`)
		bearer("PATCH", "/v1/plugins/lookup", `{"status": "1"}`)
		bearer("PUT", "/v1/credentials/7/API_KEY", `{"value": "`+secret+`"}`)
		_, _, tok := bearer("POST", "/v1/tokens", `{"user_id": 7, "name": "ruoyi-7", "console_only": true, "expires_in_seconds": 86400}`)
		var created struct {
			Token string `json:"token"`
			ID    int64  `json:"token_id"`
		}
		json.Unmarshal(tok, &created)
		bearer("DELETE", "/v1/quotas/rules/u7-minute", "")
		bearer("POST", "/v1/mcp/servers", `{"name": "docs", "url": "https://mcp.example/mcp?tenant=acme-0123456789", "transport": "streamable_http"}`)

		want := map[string][]string{
			"en": {
				"MCP server “docs” registered at https://mcp.example/mcp",
				"quota rule “u7-minute” deleted",
				fmt.Sprintf("token #%d created for user 7 “ruoyi-7”, console only, valid 1d", created.ID),
				"credential “API_KEY” of user 7 set",
				"plugin “lookup” disabled",
				"lookup marked consequential (each call waits for approval)",
				"plugin “lookup” added",
				"quota rule “u7-minute” added: 3 calls a minute for lookup, user 7",
				"quota rule “daily-deletes” added: 10 calls a day for consequential tools, each user",
			},
			"zh-CN,zh;q=0.9,en;q=0.5": {
				"MCP 服务“docs”已注册，地址 https://mcp.example/mcp",
				"配额规则“u7-minute”已删除",
				fmt.Sprintf("已为用户 7 创建令牌 #%d“ruoyi-7”，仅限控制台，有效期 1d", created.ID),
				"用户 7 的凭据“API_KEY”已设置",
				"插件“lookup”已停用",
				"lookup已标记为需确认（每次调用等待批准）",
				"插件“lookup”已添加",
				"配额规则“u7-minute”已添加：lookup每分钟 3 次调用，用户 7",
				"配额规则“daily-deletes”已添加：需确认的工具每天 10 次调用，每个用户",
			},
		}
		for lang, sentences := range want {
			_, _, raw := bearer("GET", "/v1/audit", "", "Accept-Language", lang)
			if strings.Contains(string(raw), secret) || strings.Contains(string(raw), created.Token) || strings.Contains(string(raw), "acme-0123456789") {
				t.Fatalf("the log shows a secret: %s", raw)
			}
			var page struct {
				Events []struct {
					Summary, Who, Via string
				} `json:"events"`
			}
			json.Unmarshal(raw, &page)
			var got []string
			for _, ev := range page.Events {
				got = append(got, ev.Summary)
				if ev.Via != "api" || ev.Who != map[string]string{"en": "the administrator"}[lang] && ev.Who != "管理员" {
					t.Errorf("who %q via %q", ev.Who, ev.Via)
				}
			}
			if strings.Join(got, "\n") != strings.Join(sentences, "\n") {
				t.Errorf("%s:\n%s\nwant:\n%s", lang, strings.Join(got, "\n"), strings.Join(sentences, "\n"))
			}
		}

		// The export: JSON lines, a page at a time, the next in Link.
		var lines []string
		next := "/v1/audit?limit=4"
		for pages := 0; next != ""; pages++ {
			if pages > 5 {
				t.Fatal("the export does not end")
			}
			_, h, raw := bearer("GET", next, "", "Accept", "application/x-ndjson")
			if !strings.HasPrefix(h.Get("Content-Type"), "application/x-ndjson") {
				t.Fatalf("Content-Type %q", h.Get("Content-Type"))
			}
			for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				var ev map[string]any
				if err := json.Unmarshal([]byte(l), &ev); err != nil || ev["summary"] == "" {
					t.Fatalf("line %q: %v", l, err)
				}
				lines = append(lines, ev["summary"].(string))
			}
			next = ""
			if l := h.Get("Link"); l != "" {
				next = strings.TrimPrefix(strings.Split(l, ">")[0], "<")
			}
		}
		if strings.Join(lines, "\n") != strings.Join(want["en"], "\n") {
			t.Errorf("export:\n%s", strings.Join(lines, "\n"))
		}
	})
}

// TestDecisionInWords (issue 51 point 4): a person's decision on a
// waiting call is one row saying which call, for whom, the outcome, by
// whom and why.
func TestDecisionInWords(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	e, admin, csrf := confirmingConsole(t, st)
	plugin := `{"name": "DeleteCustomersCustomer", "description": "Permanently deletes a customer", "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}},
		"execution": {"method": "DELETE", "base_url": "https://api.stripe.example/v1/customers/{customer}"}}`
	if code, body := do(t, admin, "POST", e.url+"/v1/plugins", csrf, plugin); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	_, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "agent"}`)
	user := &http.Client{Transport: bearerRT(tok["token"].(string))}
	code, prepared := do(t, user, "POST", e.url+"/v1/execute", "", `{"name": "DeleteCustomersCustomer", "arguments": {"customer": "cus_123"}, "prepare": true}`)
	if code != http.StatusOK {
		t.Fatalf("prepare: %d %v", code, prepared)
	}
	id := prepared["pending"].(map[string]any)["id"].(string)
	if code, body := do(t, user, "POST", e.url+"/v1/pending/"+id, "", `{"decision": "deny", "reason": "I asked for cus_456"}`); code/100 != 2 {
		t.Fatalf("deny: %d %v", code, body)
	}
	code, log := do(t, admin, "GET", e.url+"/v1/audit?kind=decision", "", "")
	events, _ := log["events"].([]any)
	if code != http.StatusOK || len(events) != 1 {
		t.Fatalf("the log: %d %v", code, log)
	}
	ev := events[0].(map[string]any)
	if ev["summary"] != "call “DeleteCustomersCustomer” for user 7 denied by user 7: I asked for cus_456" || ev["via"] != "api" {
		t.Errorf("the decision reads %q via %v", ev["summary"], ev["via"])
	}
}
