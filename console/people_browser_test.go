package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/tracing"
)

// peopleSecret is user 2's API key: it reaches the upstream, never a page.
const peopleSecret = "sk-people-secret-0123456789abcdef"

// peopleEnv is a console over RuoYi-Vue's own tables (its database
// script, unmodified, in MariaDB) with BLINDEXEC_PERMISSIONS=ruoyi, role
// 2 ("common", user 2 "ry") without the menu granting system:role:list;
// consequential calls wait for a person; the model is scripted. Plugins:
// delete_customer (DELETE, titled, user 2's key added when sent),
// list_users (system:user:list) and list_roles (system:role:list).
type peopleEnv struct {
	*env
	llm   *openaitest.Server
	admin *http.Client // the admin token, as RuoYi's service would call
	mu    sync.Mutex
	sent  []string
}

func newPeopleEnv(t *testing.T) *peopleEnv {
	t.Helper()
	st := testdb.Script(t, "../access/testdata/ruoyi-vue/ry_20260417.sql")
	if _, err := st.DB().Exec("delete from sys_role_menu where role_id = 2 and menu_id = 101"); err != nil {
		t.Fatal(err)
	}
	checker, err := access.New(st.DB(), access.Settings{Mode: access.ModeOpen, Source: access.SourceRuoYi, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	pe := &peopleEnv{llm: openaitest.New(t), admin: &http.Client{Transport: bearerRT(adminToken)}}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pe.mu.Lock()
		pe.sent = append(pe.sent, r.Method+" "+r.URL.RequestURI()+" key="+r.Header.Get("X-Api-Key"))
		pe.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"deleted":true,"id":"`+r.URL.Query().Get("id")+`"}`)
	}))
	t.Cleanup(up.Close)
	// Traced, as an operator with a tracing backend serves: a run keeps
	// its trace id, which its page shows.
	tr := tracing.NewWithProcessor(tracing.Config{}, "test", sdktrace.NewSimpleSpanProcessor(tracetest.NewInMemoryExporter()))
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	pe.env = newEnv(t, st, newMasterKey(), func(s *api.Server) {
		s.Tracer = tr.Tracer
		s.Access, s.Executor.Access = checker, checker
		s.Confirm = confirm.Consequential
		s.Runner = &loop.Runner{Client: loop.NewClient(pe.llm.Config()), Executor: s.Executor, DefaultModel: "scripted",
			LLMTimeout: 5 * time.Second, LLMBackoff: time.Millisecond, Confirm: confirm.Consequential}
	})
	for _, doc := range []string{
		`{"name": "delete_customer", "title": "Permanently deletes a customer", "description": "Deletes a customer and every record of it.",
		  "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
		  "execution": {"method": "DELETE", "base_url": "` + up.URL + `/customers"},
		  "auth_config": {"type": "api_key", "mapping": [{"source": "CRM_KEY", "target": "X-Api-Key"}]}}`,
		`{"name": "list_users", "description": "Lists users", "parameters": {"type": "object", "properties": {}},
		  "execution": {"method": "GET", "base_url": "` + up.URL + `/users"}, "perms": ["system:user:list"]}`,
		`{"name": "list_roles", "description": "Lists roles", "parameters": {"type": "object", "properties": {}},
		  "execution": {"method": "GET", "base_url": "` + up.URL + `/roles"}, "perms": ["system:role:list"]}`,
	} {
		if code, out := do(t, pe.admin, "POST", pe.url+"/v1/plugins", "", doc); code != http.StatusCreated {
			t.Fatalf("plugin: %d %v", code, out)
		}
	}
	if code, out := do(t, pe.admin, "PUT", pe.url+"/v1/credentials/2/CRM_KEY", "", `{"value":"`+peopleSecret+`"}`); code/100 != 2 {
		t.Fatalf("credential: %d %v", code, out)
	}
	if code, out := do(t, pe.admin, "POST", pe.url+"/v1/agents", "", `{"name": "crm", "description": "Customers", "tools": {"names": ["delete_customer"]}}`); code != http.StatusCreated {
		t.Fatalf("agent: %d %v", code, out)
	}
	return pe
}

// run starts a run for user 2 as RuoYi's service would (the admin token
// here), the model answering turns.
func (pe *peopleEnv) run(t *testing.T, ask string, turns ...openaitest.Turn) map[string]any {
	t.Helper()
	pe.llm.Script(turns...)
	body, _ := json.Marshal(map[string]any{"user_id": 2, "messages": []map[string]string{{"role": "user", "content": ask}},
		"plugin_names": []string{"delete_customer", "list_users"}})
	_, out := do(t, pe.admin, "POST", pe.url+"/v1/runs", "", string(body))
	return out
}

func (pe *peopleEnv) upstream() []string {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	return append([]string{}, pe.sent...)
}

func deleteCall(id string) openaitest.Turn {
	return openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "delete_customer", Arguments: `{"id":"` + id + `"}`}}}
}

// noSideways reports whether the page fits its width (no sideways
// scroll).
func (tb *tab) noSideways(where string) {
	tb.t.Helper()
	if w := eval[int](tb, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		tb.t.Errorf("%s scrolls sideways by %d px", where, w)
	}
}

// TestPeoplePagesInBrowser (issue 51 points 1–3, issue 46 point 5): in
// chromium, over RuoYi's real schema — Approvals says for whom (user 2
// and RuoYi's name for it), what the user asked, the tool's title and
// description, the request with the key "added when sent", the expiry,
// filters by user, and after a decision what happened with a link to
// the run; the run reads as a conversation; the runs page lists paused,
// failed and completed runs and filters them; the playground refuses a
// run for no user, then streams one for user 2 and decides its paused
// call in place; the Access page says which roles may use a tool and why
// user 2 may (not) use one; in English and Chinese, at desktop and phone
// width; a per-user session sees its own runs and tools only.
func TestPeoplePagesInBrowser(t *testing.T) {
	needBrowser(t)
	pe := newPeopleEnv(t)
	paused := pe.run(t, "删除客户 cus_456", deleteCall("cus_123"))
	if paused["status"] != "paused" {
		t.Fatalf("run A: %v", paused)
	}
	runA := paused["run_id"].(string)
	itemA := paused["pending"].([]any)[0].(map[string]any)["id"].(string)
	if failed := pe.run(t, "查一下用户列表", openaitest.Turn{Status: 400}); failed["status"] != "failed" {
		t.Fatalf("run B: %v", failed)
	}
	pausedC := pe.run(t, "删除客户 cus_999", deleteCall("cus_999"))
	itemC := pausedC["pending"].([]any)[0].(map[string]any)["id"].(string)

	tb := newTab(t)
	tb.signIn(pe.url, adminToken)

	// Approvals: a person can decide on each item.
	tb.open(pe.url, "approvals", "approvals")
	a := `.approval[data-id="` + itemA + `"]`
	text := tb.text(a)
	for _, want := range []string{"For user 2 · 若依 (ry)", "The user asked: 删除客户 cus_456", "Permanently deletes a customer",
		"Deletes a customer and every record of it.", "DELETE", "/customers?id=cus_123", "X-Api-Key", "added when sent", "Expires"} {
		if !strings.Contains(text, want) {
			t.Errorf("the approval lacks %q: %s", want, text)
		}
	}
	if html := eval[string](tb, `document.body.innerHTML`); strings.Contains(html, peopleSecret) || strings.Contains(html, peopleSecret[len(peopleSecret)-6:]) {
		t.Error("the Approvals page shows the key")
	}
	tb.screenshot("approvals-people")
	tb.open(pe.url, "approvals/7", "approvals")
	if n := eval[int](tb, `document.querySelectorAll('#page section.approval').length`); n != 0 || !strings.Contains(tb.text("#page"), "Nothing waits") {
		t.Errorf("filtered to user 7: %d items", n)
	}
	tb.open(pe.url, "approvals/2", "approvals")
	pe.llm.Script(openaitest.Turn{Content: "已删除 cus_123。"})
	tb.do(chromedp.SendKeys(chromedp.CSS(a+` input.reason`), "the user asked"), chromedp.Click(chromedp.CSS(a+` button.approve`)))
	tb.wait(a + ` .outcome p.ok`)
	if got := tb.text(a + ` .outcome`); !strings.Contains(got, "Approved and sent: the API answered HTTP 200.") || !strings.Contains(got, "Open the run") || strings.Contains(got, "null") {
		t.Errorf("after Approve: %s", got)
	}
	if sent := pe.upstream(); len(sent) != 1 || sent[0] != "DELETE /customers?id=cus_123 key="+peopleSecret {
		t.Errorf("sent upstream: %v", sent)
	}

	// The run, as a conversation, reached from the decision.
	tb.do(chromedp.Click(chromedp.CSS(a + ` .outcome a`)))
	tb.waitPage("run")
	convo := tb.text("#conversation")
	for _, want := range []string{"User", "删除客户 cus_456", "Calls delete_customer", `"id":"cus_123"`, "approved", "by the administrator", "sent", "HTTP 200",
		"Latency (ms)", "Execution id", `"deleted":true`, "已删除 cus_123。"} {
		if !strings.Contains(convo, want) {
			t.Errorf("the run's conversation lacks %q: %s", want, convo)
		}
	}
	if meta := tb.text(".run-meta"); !strings.Contains(meta, "user 2 · 若依 (ry)") || !strings.Contains(meta, "completed") {
		t.Errorf("the run's facts: %s", meta)
	}
	if trace, _ := apiGet(t, pe.url, "/v1/runs/"+runA)["trace_id"].(string); len(trace) != 32 || tb.text(".run-meta a.trace-id") != trace {
		t.Errorf("the run's trace id %q, shown %q", trace, tb.text(".run-meta a.trace-id"))
	}
	if eval[bool](tb, `document.querySelector('details.raw').open`) || !strings.Contains(tb.text("details.raw"), `"run_id"`) {
		t.Error("the raw JSON is not behind a closed toggle")
	}
	tb.screenshot("run")

	// The runs: every one, filtered.
	tb.open(pe.url, "runs", "runs")
	rows := tb.text("#runs")
	for _, want := range []string{runA, "user 2 · 若依 (ry)", "删除客户 cus_456", "查一下用户列表", "failed", "waits for a decision", "completed"} {
		if !strings.Contains(rows, want) {
			t.Errorf("the runs lack %q: %s", want, rows)
		}
	}
	tb.do(chromedp.SetValue(chromedp.CSS(`#runs-status`), "failed"), chromedp.Click(chromedp.CSS(`#runs-filter button`)))
	tb.wait(`#page[data-ready="true"][data-page="runs"] #runs-status option[value="failed"][selected]`)
	if n := eval[int](tb, `document.querySelectorAll('#runs tbody tr').length`); n != 1 || !strings.Contains(tb.text("#runs"), "查一下用户列表") {
		t.Errorf("status failed: %d rows: %s", n, tb.text("#runs"))
	}
	tb.screenshot("runs")

	// The playground: never a run for no user; user 2's run streams, its
	// paused call is decided in place.
	count := func() int { return len(apiGet(t, pe.url, "/v1/runs")["runs"].([]any)) }
	before := count()
	tb.open(pe.url, "playground", "playground")
	tb.do(chromedp.SendKeys(chromedp.CSS(`#pg-message`), "删除客户 cus_789"), chromedp.Click(chromedp.CSS(`#pg-send`)))
	tb.wait(`#pg-status .error`)
	if got := tb.text("#pg-status"); !strings.Contains(got, "user_id:") || count() != before {
		t.Fatalf("a run for no user: %s (%d runs, were %d)", got, count(), before)
	}
	tb.do(chromedp.SendKeys(chromedp.CSS(`#pg-user`), "2"), chromedp.SetValue(chromedp.CSS(`#pg-agent`), "crm"))
	eval[bool](tb, `(document.querySelector('#pg-agent').dispatchEvent(new Event('change')), true)`)
	if got := tb.text("#pg-acting") + tb.text("#pg-agent-tools"); !strings.Contains(got, "The run acts for user 2") || !strings.Contains(got, "delete_customer") {
		t.Errorf("the playground names: %s", got)
	}
	streamed := deleteCall("cus_789")
	streamed.Content, streamed.Chunk = "好的，这就删除。", 1
	pe.llm.Script(streamed) // the turn after the pause is scripted at the decision
	// The run names the agent (the engine selects its tools and holds the
	// run to them), not the tools the page saw.
	eval[bool](tb, `(() => { const f = window.fetch; window.sentRuns = []; window.fetch = (u, o) => { if (u === '/v1/runs') sentRuns.push(JSON.parse(o.body)); return f(u, o); }; return true; })()`)
	tb.do(chromedp.Click(chromedp.CSS(`#pg-send`)))
	tb.wait(`#pg-status section.approval button.approve`)
	if sent := eval[[]map[string]any](tb, `sentRuns`); len(sent) != 1 || sent[0]["agent"] != "crm" || sent[0]["plugin_names"] != nil {
		t.Errorf("the playground sent %v", sent)
	}
	if got := tb.text("#pg-status"); !strings.Contains(got, "删除客户 cus_789") || !strings.Contains(got, "For user 2") {
		t.Errorf("the paused call in place: %s", got)
	}
	pe.llm.Script(openaitest.Turn{Content: "已删除 cus_789。"})
	tb.do(chromedp.Click(chromedp.CSS(`#pg-status section.approval button.approve`)))
	tb.wait(`#pg-status p.ok`)
	if got := tb.text("#pg-convo"); !strings.Contains(got, "删除客户 cus_789") || !strings.Contains(got, "好的，这就删除。") || !strings.Contains(got, "Calls delete_customer") ||
		!strings.Contains(got, "approved") || !strings.Contains(got, `"deleted":true`) || !strings.Contains(got, "已删除 cus_789。") || strings.Contains(got, "null") {
		t.Errorf("the playground's conversation: %s", got)
	}
	if sent := pe.upstream(); len(sent) != 2 || !strings.HasPrefix(sent[1], "DELETE /customers?id=cus_789") {
		t.Errorf("sent upstream: %v", sent)
	}
	tb.screenshot("playground")

	// Access: which roles may use a tool, why user 2 may (not).
	tb.open(pe.url, "access/list_users/2", "access")
	if got := tb.text("#access-result"); eval[string](tb, `document.querySelector('#access-decision').dataset.allowed`) != "true" ||
		!strings.Contains(got, "普通角色") || !strings.Contains(got, "system:user:list") || !strings.Contains(got, "user 2 · 若依 (ry) may use list_users.") {
		t.Errorf("list_users for user 2: %s", got)
	}
	tb.open(pe.url, "access/list_roles/2", "access")
	if got := tb.text("#access-result"); eval[string](tb, `document.querySelector('#access-decision').dataset.allowed`) != "false" ||
		!strings.Contains(got, "may not use list_roles") || !strings.Contains(got, "hold none of those it needs") || !strings.Contains(got, "Only RuoYi") && !strings.Contains(got, "only RuoYi") {
		t.Errorf("list_roles for user 2: %s", got)
	}
	if got := tb.text("#agents"); !strings.Contains(got, "crm") || !strings.Contains(got, "delete_customer") {
		t.Errorf("the agents: %s", got)
	}
	tb.screenshot("access")

	// At phone width, nothing scrolls sideways.
	tb.viewport(390, 844, true)
	for _, p := range [][2]string{{"runs", "runs"}, {"run/" + runA, "run"}, {"approvals", "approvals"}, {"playground", "playground"}, {"access/list_users/2", "access"}} {
		tb.open(pe.url, p[0], p[1])
		tb.noSideways(p[0] + " at phone width")
	}

	// In Chinese: every string translated; a denial says so.
	eval[bool](tb, `(localStorage.setItem('blindexec.lang', 'zh-CN'), true)`)
	tb.open(pe.url, "runs", "runs")
	tb.do(chromedp.Reload())
	tb.waitPage("runs")
	if missing := eval[[]string](tb, `Object.keys(I18N.en).filter((k) => !(k in I18N['zh-CN']))`); len(missing) != 0 {
		t.Errorf("strings without Chinese: %v", missing)
	}
	if got := tb.text("#page"); !strings.Contains(got, "运行记录") || !strings.Contains(got, "用户 2 · 若依 (ry)") || !strings.Contains(got, "失败") {
		t.Errorf("the runs in Chinese: %s", got)
	}
	tb.noSideways("the runs in Chinese at phone width")
	tb.viewport(1280, 800, false)
	tb.open(pe.url, "approvals", "approvals")
	c := `.approval[data-id="` + itemC + `"]`
	if got := tb.text(c); !strings.Contains(got, "代表 用户 2") || !strings.Contains(got, "用户的请求: 删除客户 cus_999") || !strings.Contains(got, "发送时添加") {
		t.Errorf("the approval in Chinese: %s", got)
	}
	pe.llm.Script(openaitest.Turn{Content: "好的，未删除。"})
	tb.do(chromedp.Click(chromedp.CSS(c + ` button.deny`)))
	tb.wait(c + ` .outcome p`)
	if got := tb.text(c + ` .outcome`); !strings.Contains(got, "已拒绝") || !strings.Contains(got, "查看运行") {
		t.Errorf("after Deny, in Chinese: %s", got)
	}
	if sent := pe.upstream(); len(sent) != 2 {
		t.Errorf("a denied call was sent: %v", sent)
	}
	tb.screenshot("approvals-people-zh")
	tb.open(pe.url, "run/"+pausedC["run_id"].(string), "run")
	if got := tb.text("#conversation"); !strings.Contains(got, "调用 delete_customer") || !strings.Contains(got, "已拒绝") {
		t.Errorf("the denied run in Chinese: %s", got)
	}
	tb.open(pe.url, "access/list_users/2", "access")
	if got := tb.text("#access-result"); !strings.Contains(got, "可以使用 list_users") || !strings.Contains(got, "普通角色") {
		t.Errorf("access in Chinese: %s", got)
	}
	tb.open(pe.url, "playground", "playground")
	tb.do(chromedp.SendKeys(chromedp.CSS(`#pg-message`), "你好"), chromedp.Click(chromedp.CSS(`#pg-send`)))
	tb.wait(`#pg-status .error`)
	if got := tb.text("#pg-status"); !strings.Contains(got, "请指定本次运行代表的用户") {
		t.Errorf("the playground in Chinese: %s", got)
	}

	// A per-user session: its own runs and tools, no Access page.
	_, tok := do(t, pe.admin, "POST", pe.url+"/v1/tokens", "", `{"user_id": 2, "name": "ry"}`)
	ut := newTab(t)
	ut.signIn(pe.url, tok["token"].(string))
	ut.open(pe.url, "runs", "runs")
	if n := eval[int](ut, `document.querySelectorAll('#runs tbody tr').length`); n != 4 || !eval[bool](ut, `document.querySelector('#runs-user').disabled`) {
		t.Errorf("user 2's runs: %d rows", n)
	}
	if eval[bool](ut, `document.querySelector('#nav a[href="#/access"]') !== null`) {
		t.Error("a user's menu links to Access")
	}
	ut.open(pe.url, "tools", "tools")
	if got := ut.text("#page"); !strings.Contains(got, "list_users") || strings.Contains(got, "list_roles") {
		t.Errorf("user 2's tools: %s", got)
	}
	ut.open(pe.url, "playground", "playground")
	if got := ut.text("#pg-acting"); !strings.Contains(got, "The run acts for you, user 2") {
		t.Errorf("the user's playground: %s", got)
	}
	ut.open(pe.url, "access/list_users/2", "access")
	if got := ut.text("#page"); !strings.Contains(got, "administrator's") {
		t.Errorf("the Access page to a user: %s", got)
	}
}
