package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
)

// TestGrantOnAccessInBrowser: a newcomer administrator of a RuoYi shop
// sees on Access that user 2 may not use list_roles, and grants it there,
// setting the permissions the tool needs to one the user's role's menus
// grant; a refused list keeps what was typed and says why in Chinese. Before,
// the page showed the permissions and never how to change them (only
// POST /v1/plugins/perms over the API, or the plugin's JSON by hand).
func TestGrantOnAccessInBrowser(t *testing.T) {
	needBrowser(t)
	pe := newPeopleEnv(t)
	tb := newTab(t)
	tb.signIn(pe.url, adminToken)
	tb.open(pe.url, "access/list_roles/2", "access")
	allowed := func() string {
		return eval[string](tb, `document.querySelector('#access-decision').dataset.allowed`)
	}
	if allowed() != "false" {
		t.Fatalf("user 2 may use list_roles before the grant: %s", tb.text("#access-result"))
	}
	if !eval[bool](tb, `document.querySelector('#access-perms') !== null`) {
		t.Fatalf("the Access page offers no way to set the permissions a tool needs: %s", tb.text("#access-result"))
	}
	if v := eval[string](tb, `document.querySelector('#access-perms').value`); v != "system:role:list" {
		t.Errorf("the permissions field holds %q, want the tool's own", v)
	}

	// Refused (a permission listed twice), in Chinese: what was typed stays.
	tb.setLang("zh-CN")
	tb.open(pe.url, "access/list_roles/2", "access")
	const twice = "system:user:list, system:user:list"
	tb.do(chromedp.SetValue(chromedp.CSS("#access-perms"), twice), chromedp.Click(chromedp.CSS("#access-perms-save")))
	tb.wait("#access-perms-msg .error")
	if got := tb.text("#access-perms-msg .error"); !strings.Contains(got, "请求") || !strings.Contains(got, "perms[1]") {
		t.Errorf("the refusal in Chinese: %s", got)
	}
	if v := eval[string](tb, `document.querySelector('#access-perms').value`); v != twice {
		t.Errorf("after the refusal the field holds %q, want what was typed", v)
	}

	// Granted: the page redraws with the decision it makes.
	tb.do(chromedp.SetValue(chromedp.CSS("#access-perms"), "system:user:list"), chromedp.Click(chromedp.CSS("#access-perms-save")))
	tb.wait(`#page[data-ready="true"] #access-decision[data-allowed="true"]`)
	if got := tb.text("#access-result"); !strings.Contains(got, "可以使用 list_roles") || !strings.Contains(got, "system:user:list") || !strings.Contains(got, "普通角色") {
		t.Errorf("after the grant: %s", got)
	}

	// A user's session reaches the route by hand: the engine refuses it.
	_, tok := do(t, pe.admin, "POST", pe.url+"/v1/tokens", "", `{"user_id": 2, "name": "ry"}`)
	ut := newTab(t)
	ut.signIn(pe.url, tok["token"].(string))
	status := eval[int](ut, `(async () => { const s = await (await fetch('/console/api/session')).json();
		const r = await fetch('/v1/plugins/perms', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf },
			body: JSON.stringify({ names: ['delete_customer'], perms: [] }) });
		return r.status; })()`)
	if status != http.StatusForbidden {
		t.Errorf("a user's session set a tool's permissions: %d", status)
	}
	// And every other route the user's menu hides (held before and after).
	for _, route := range []string{"GET /v1/plugins", "GET /v1/plugins/list_users", "GET /v1/mcp/servers", "POST /v1/mcp/servers",
		"POST /v1/plugins/import/openapi", "GET /v1/tokens", "POST /v1/tokens", "GET /v1/quotas/rules", "POST /v1/quotas/rules",
		"GET /v1/credentials/1", "PUT /v1/credentials/1/CRM_KEY", "GET /v1/quotas?user_id=1", "GET /v1/executions?user_id=1",
		"GET /v1/tools/list_users/access", "GET /v1/audit", "POST /v1/plugins/consequential"} {
		method, path, _ := strings.Cut(route, " ")
		status := eval[int](ut, `(async () => { const s = await (await fetch('/console/api/session')).json();
			const r = await fetch('`+path+`', { method: '`+method+`', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf },
				body: '`+method+`' === 'GET' ? undefined : '{"value": "x", "name": "x", "user_id": 1, "names": ["list_roles"], "consequential": false, "calls": 1}' });
			return r.status; })()`)
		if status != http.StatusForbidden {
			t.Errorf("%s from user 2's session: %d, want 403", route, status)
		}
	}
}

// TestMCPImportInWordsInBrowser: importing an MCP server's tools says what
// was added and which wait for approval, in the console's language, as an
// OpenAPI import does; before, the page showed the engine's report as JSON
// (English keys, in the Chinese page too).
func TestMCPImportInWordsInBrowser(t *testing.T) {
	needBrowser(t)
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	med := mcptest.New(t)
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.setLang("zh-CN")
	tb.open(e.url, "mcp", "mcp")
	tb.do(chromedp.SendKeys(chromedp.CSS("#mcp-name"), "med"), chromedp.SendKeys(chromedp.CSS("#mcp-url"), med.Endpoint),
		chromedp.Click(chromedp.CSS("#mcp-form button")))
	tb.wait("#mcp-servers button:not(.secondary):not(.danger)")
	tb.do(chromedp.Click(chromedp.CSS("#mcp-servers button:not(.secondary):not(.danger)")))
	tb.wait("#mcp-detail h2, #mcp-detail pre")
	if n := eval[int](tb, `document.querySelectorAll('#mcp-detail pre').length`); n != 0 {
		t.Errorf("the import's report shown as JSON: %s", tb.text("#mcp-detail"))
	}
	tb.wait("#mcp-detail .diff-added li")
	got := tb.text("#mcp-detail")
	for _, want := range []string{"已应用", "新增", "未变", "等待批准"} {
		if !strings.Contains(got, want) {
			t.Errorf("the import's report lacks %q: %s", want, got)
		}
	}
	for _, raw := range []string{`"added"`, "source_id", "consequential"} {
		if strings.Contains(got, raw) {
			t.Errorf("the import's report shows %s: %s", raw, got)
		}
	}
}

// TestSecretKeptOnRefusalInBrowser: a credential key, or an OAuth
// provider's name, the engine refuses (a space in it) leaves the secret
// typed in its field, so that correcting the name is all it takes; once
// stored, the page redraws without it. Before, the secret was emptied as
// the form was sent, and typed again after any refusal.
func TestSecretKeptOnRefusalInBrowser(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, "sqlite")
	e := newEnv(t, st, newMasterKey(), func(s *api.Server) {
		kr, err := auth.ParseKeyring(newMasterKey(), "")
		if err != nil {
			t.Fatal(err)
		}
		conns := connections.New(st, kr, egresstest.Client(t), "")
		conns.Catalog, conns.Logger = s.Executor.Catalog.(*auth.Catalog), s.Logger
		s.Connections, s.Executor.Connections = conns, conns
	})
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.open(e.url, "credentials/7", "credentials")
	const value = "typed-value-0123456789"
	tb.do(chromedp.SendKeys(chromedp.CSS("#cred-key"), "CRM KEY"), chromedp.SendKeys(chromedp.CSS("#cred-value"), value),
		chromedp.Click(chromedp.CSS("#cred-form button")))
	tb.wait("#page .error")
	if v := eval[string](tb, `document.querySelector('#cred-value').value`); v != value {
		t.Errorf("after the refused key the value field holds %q", v)
	}
	tb.do(chromedp.SetValue(chromedp.CSS("#cred-key"), "CRM_KEY"), chromedp.Click(chromedp.CSS("#cred-form button")))
	tb.wait("#cred-list")
	if v := eval[string](tb, `document.querySelector('#cred-value').value`); v != "" {
		t.Errorf("the stored value stays in the redrawn form: %q", v)
	}
	if html := eval[string](tb, `document.documentElement.outerHTML`); strings.Contains(html, value) {
		t.Error("the stored value is in the page")
	}

	const secret = "client-secret-0123456789"
	tb.open(e.url, "connections", "connections")
	for id, v := range map[string]string{"name": "acme corp", "authorization_url": "https://idp.example/authorize",
		"token_url": "https://idp.example/token", "client_id": "console", "client_secret": secret} {
		tb.do(chromedp.SendKeys(chromedp.CSS(`#prov-`+id), v))
	}
	tb.do(chromedp.Click(chromedp.CSS(`#provider-form > button`)))
	tb.wait("#page .error[data-code]")
	if v := eval[string](tb, `document.querySelector('#prov-client_secret').value`); v != secret {
		t.Errorf("after the refused name the client secret field holds %q", v)
	}
	tb.do(chromedp.SetValue(chromedp.CSS("#prov-name"), "acme"), chromedp.Click(chromedp.CSS(`#provider-form > button`)))
	tb.wait("#providers")
	if html := eval[string](tb, `document.documentElement.outerHTML`); strings.Contains(html, secret) {
		t.Error("the stored client secret is in the page")
	}
}

// TestRunErrorsInWordsInBrowser: in the Chinese console, a run stopped by
// the user's run token quota and a decision another person took first say
// what happened in Chinese, the engine's words after; before, the run
// page and the playground showed the error code raw ("budget_exhausted —
// …", a code without a sentence) and Approvals the engine's English alone.
func TestRunErrorsInWordsInBrowser(t *testing.T) {
	needBrowser(t)
	pe := newPeopleEnv(t)
	paused := pe.run(t, "删除客户 cus_1", deleteCall("cus_1"))
	item := paused["pending"].([]any)[0].(map[string]any)["id"].(string)
	if code, out := do(t, pe.admin, "POST", pe.url+"/v1/quotas/rules", "", `{"name": "ry_runs", "user_id": 2, "run_tokens_per_day": 10}`); code != http.StatusCreated {
		t.Fatalf("rule: %d %v", code, out)
	}
	if first := pe.run(t, "你好", openaitest.Turn{Content: "你好！", Usage: openai.Usage{PromptTokens: 40, CompletionTokens: 10, TotalTokens: 50}}); first["status"] != "completed" {
		t.Fatalf("the first run: %v", first)
	}
	spent := pe.run(t, "再问一次")
	if spent["status"] != "budget_exhausted" {
		t.Fatalf("the run past the budget: %v", spent)
	}

	tb := newTab(t)
	tb.signIn(pe.url, adminToken)
	tb.setLang("zh-CN")
	tb.open(pe.url, "run/"+spent["run_id"].(string), "run")
	if got := tb.text("#page div.error"); !strings.Contains(got, "今天用于运行的模型令牌已用完") || strings.Contains(got, "budget_exhausted") {
		t.Errorf("the spent run's error: %s", got)
	}

	// Decided elsewhere (RuoYi's service, the admin token) while the page
	// was open: the page's decision is refused, in words.
	tb.open(pe.url, "approvals/2", "approvals")
	a := `.approval[data-id="` + item + `"]`
	tb.wait(a + ` button.approve`)
	pe.llm.Script(openaitest.Turn{Content: "好的。"})
	if code, out := do(t, pe.admin, "POST", pe.url+"/v1/runs/"+paused["run_id"].(string)+"/resume", "", `{"decisions": [{"id": "`+item+`", "decision": "deny"}]}`); code != http.StatusOK {
		t.Fatalf("deny over the API: %d %v", code, out)
	}
	tb.do(chromedp.Click(chromedp.CSS(a + ` button.approve`)))
	tb.wait(a + ` .outcome p.error`)
	if got := tb.text(a + ` .outcome p.error`); !strings.Contains(got, "未在此决定") || !strings.Contains(got, "引擎返回") {
		t.Errorf("the refused decision: %s", got)
	}
	if sent := pe.upstream(); len(sent) != 0 {
		t.Errorf("sent upstream: %v", sent)
	}
}

// TestPluginJSONInWordsInBrowser: a plugin's document edited into
// something not JSON is refused on the page in the console's language,
// the browser's own (English) reading after it, what was typed kept;
// before, the Chinese page said only "JSON: Expected property name…".
func TestPluginJSONInWordsInBrowser(t *testing.T) {
	needBrowser(t)
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	admin := &http.Client{Transport: bearerRT(adminToken)}
	if code, out := do(t, admin, "POST", e.url+"/v1/plugins", "", `{"name": "get_order", "description": "d", "parameters": {"type": "object"},
		"execution": {"method": "GET", "base_url": "http://127.0.0.1:1/orders"}}`); code != http.StatusCreated {
		t.Fatalf("plugin: %d %v", code, out)
	}
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.setLang("zh-CN")
	tb.open(e.url, "plugin/get_order", "plugin")
	tb.do(chromedp.SetValue(chromedp.CSS("#plugin-doc"), "{bad"), chromedp.Click(chromedp.CSS("#plugin-save")))
	tb.wait("#page p.error")
	if got := tb.text("#page p.error"); !strings.HasPrefix(got, "这不是有效的 JSON") {
		t.Errorf("the refusal in Chinese: %s", got)
	}
	if v := eval[string](tb, `document.querySelector('#plugin-doc').value`); v != "{bad" {
		t.Errorf("the document typed became %q", v)
	}
}
