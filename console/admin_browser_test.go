package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// confirm waits for the dialog a destructive action opens, checks that it
// names what goes (want), and confirms.
func (tb *tab) confirm(want string) {
	tb.t.Helper()
	tb.wait(`dialog.confirm[open]`)
	if s := tb.text(`dialog.confirm[open] .confirm-text`); !strings.Contains(s, want) {
		tb.t.Errorf("the confirmation says %q, want it to name %q", s, want)
	}
	tb.do(chromedp.Click(chromedp.CSS(`dialog.confirm[open] .confirm-yes`)))
}

// setLang sets the console's language as its selector remembers it.
func (tb *tab) setLang(lang string) {
	tb.t.Helper()
	eval[bool](tb, `(localStorage.setItem('blindexec.lang', '`+lang+`'), true)`)
	tb.do(chromedp.Navigate("about:blank")) // the next page loads in it
}

// noSidewaysScroll fails when the page is wider than the window.
func (tb *tab) noSidewaysScroll(what string) {
	tb.t.Helper()
	if w := eval[int](tb, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		tb.t.Errorf("%s: %d px wider than the window", what, w)
	}
}

// TestTokensInBrowser (issue 51 points 5 and 8): the administrator
// creates a token on #/tokens (shown once, in the list by its prefix
// only), revokes it after a confirmation naming it (Cancel first: nothing
// happens); a user's session has no such page; the log says it in words.
func TestTokensInBrowser(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, store.DialectSQLite)
	e := newEnv(t, st, newMasterKey())
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.open(e.url, "tokens", "tokens")
	tb.do(chromedp.SendKeys(chromedp.CSS(`#tok-user`), "7"), chromedp.SendKeys(chromedp.CSS(`#tok-name`), "ruoyi-clerk"),
		chromedp.SendKeys(chromedp.CSS(`#tok-perms`), "system:user:list, system:customer:remove"), chromedp.Click(chromedp.CSS(`#tok-console`)),
		chromedp.SendKeys(chromedp.CSS(`#tok-days`), "30"), chromedp.Click(chromedp.CSS(`#token-form button`)))
	tb.wait(`#token-once .token-value`)
	tok := tb.text(`#token-once .token-value`)
	if !strings.HasPrefix(tok, "bx_") {
		t.Fatalf("token shown: %q", tok)
	}
	list := tb.text(`#tokens`)
	if !strings.Contains(list, "ruoyi-clerk") || !strings.Contains(list, tok[:8]+"…") || strings.Contains(list, tok) ||
		!strings.Contains(list, "console only") || !strings.Contains(list, "system:user:list,system:customer:remove") {
		t.Errorf("the list: %q", list)
	}
	rows, err := st.ListTokens(context.Background(), nil)
	if err != nil || len(rows) != 1 || rows[0].UserID != 7 || rows[0].Scope != store.TokenScopeConsole || rows[0].ExpireTime == nil {
		t.Fatalf("stored: %+v %v", rows, err)
	}
	id := strconv.FormatInt(rows[0].ID, 10)
	for _, size := range viewports {
		tb.viewport(size.w, size.h, size.mobile)
		tb.noSidewaysScroll("tokens at " + size.name)
	}
	tb.screenshot("tokens")

	// Revoke asks first: Cancel leaves it, Revoke revokes it.
	tb.do(chromedp.Click(chromedp.CSS(`#tokens button.revoke`)))
	tb.wait(`dialog.confirm[open]`)
	tb.do(chromedp.Click(chromedp.CSS(`dialog.confirm[open] .confirm-no`)))
	if n := eval[int](tb, `document.querySelectorAll('dialog.confirm').length`); n != 0 {
		t.Errorf("%d dialogs left after Cancel", n)
	}
	if rows, _ := st.ListTokens(context.Background(), nil); len(rows) != 1 {
		t.Fatalf("Cancel revoked: %+v", rows)
	}
	tb.do(chromedp.Click(chromedp.CSS(`#tokens button.revoke`)))
	tb.confirm("#" + id + " “ruoyi-clerk” of user 7")
	tb.wait(`#tokens .empty`)
	if rows, _ := st.ListTokens(context.Background(), nil); len(rows) != 0 {
		t.Fatalf("after Revoke: %+v", rows)
	}

	// The log, in words, on the Activity page.
	tb.open(e.url, "activity", "activity")
	audit := tb.text(`#audit`)
	for _, want := range []string{"token #" + id + " revoked", "token #" + id + " created for user 7 “ruoyi-clerk”, console only, permissions system:user:list, system:customer:remove, valid 30d"} {
		if !strings.Contains(audit, want) {
			t.Errorf("the log lacks %q: %s", want, audit)
		}
	}
	if strings.Contains(audit, tok) {
		t.Error("the log shows the token")
	}
	tb.setLang("zh-CN")
	tb.open(e.url, "activity", "activity")
	if audit := tb.text(`#audit`); !strings.Contains(audit, "令牌 #"+id+" 已吊销") || !strings.Contains(audit, "管理员") || !strings.Contains(audit, "控制台") {
		t.Errorf("the log in Chinese: %s", audit)
	}

	// A user's session: no Tokens in its navigation, the page forbidden.
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	_, created := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 8, "name": "user-8"}`)
	ut := newTab(t)
	ut.signIn(e.url, created["token"].(string))
	ut.open(e.url, "tokens", "tokens")
	if s := ut.text(`#page`); !strings.Contains(s, "administrator") || eval[bool](ut, `!!document.querySelector('#nav a[href="#/tokens"]')`) {
		t.Errorf("a user's session sees the tokens page: %q", s)
	}
}

// TestAddPluginInBrowser (issue 51 points 5 and 8): a protocol v1
// document with problems shows each at the line of its field; fixed, it
// is added; deleting it from its page asks first, naming what goes.
func TestAddPluginInBrowser(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, store.DialectSQLite)
	e := newEnv(t, st, newMasterKey())
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.open(e.url, "add-plugin", "add-plugin")
	bad := `{
  // a customer lookup
  "name": "lookup_customer",
  "description": "Look up a customer",
  "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
  "execution": {
    "method": "FETCH",
    "base_url": "ftp://api.example/customers/{id}"
  }
}`
	tb.do(chromedp.SetValue(chromedp.CSS(`#add-doc`), bad), chromedp.Click(chromedp.CSS(`#add-plugin`)))
	tb.wait(`#plugin-problems`)
	// Each problem right under the line of its field.
	problems := eval[[]map[string]string](tb, `Array.from(document.querySelectorAll('#plugin-problems li.field-error')).map((p) => {
		let prev = p.previousElementSibling;
		while (prev && !prev.dataset.line) prev = prev.previousElementSibling;
		return { field: p.dataset.field, line: prev ? prev.textContent : '' };
	})`)
	byField := map[string]string{}
	for _, p := range problems {
		byField[p["field"]] = p["line"]
	}
	if l, ok := byField["execution.method"]; !ok || !strings.Contains(l, `"method": "FETCH"`) {
		t.Errorf("the method's problem is not at its line: %v", problems)
	}
	if l, ok := byField["execution.base_url"]; !ok || !strings.Contains(l, `"base_url"`) {
		t.Errorf("the base URL's problem is not at its line: %v", problems)
	}
	if code := eval[string](tb, `document.querySelector('#add-result .error').dataset.code`); code != "invalid_plugin" {
		t.Errorf("error code %q", code)
	}
	tb.screenshot("add-plugin")
	good := strings.NewReplacer(`FETCH`, `GET`, `ftp:`, `https:`).Replace(bad)
	tb.do(chromedp.SetValue(chromedp.CSS(`#add-doc`), good), chromedp.Click(chromedp.CSS(`#add-plugin`)))
	tb.wait(`#add-result .ok a`)
	if _, err := st.GetPlugin(context.Background(), "lookup_customer"); err != nil {
		t.Fatal(err)
	}
	tb.do(chromedp.Click(chromedp.CSS(`#add-result .ok a`)))
	tb.waitPage("plugin")
	tb.do(chromedp.Click(chromedp.CSS(`#plugin-delete`)))
	tb.confirm("“lookup_customer”? It is no longer offered to the model")
	tb.waitPage("catalog")
	if _, err := st.GetPlugin(context.Background(), "lookup_customer"); err == nil {
		t.Error("not deleted")
	}
}

// TestNeededCredentialsInBrowser (issue 51 point 6): the credentials page
// lists the keys user 7's tools need, marks the missing ones, sets
// Stripe's empty password; Try it's missing credentials links there.
func TestNeededCredentialsInBrowser(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, store.DialectSQLite)
	e := newEnv(t, st, newMasterKey())
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	stripe := `{"name": "GetCustomers", "title": "List all customers", "description": "List all customers.", "parameters": {"type": "object"},
		"execution": {"method": "GET", "base_url": "https://api.stripe.com/v1/customers"},
		"auth_config": {"type": "basic", "username": "STRIPE_KEY", "password": "STRIPE_PASSWORD"}}`
	if code, body := do(t, admin, "POST", e.url+"/v1/plugins", csrf, stripe); code != http.StatusCreated {
		t.Fatalf("add: %d %v", code, body)
	}
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	// The catalog's description: no "— ." where the title was cut.
	tb.open(e.url, "catalog", "catalog")
	if s := tb.text(`table.catalog td.desc`); s != "List all customers" {
		t.Errorf("the catalog's description reads %q", s)
	}
	tb.open(e.url, "try/GetCustomers", "try")
	tb.do(chromedp.SetValue(chromedp.CSS(`#run-user`), "7"), chromedp.Click(chromedp.CSS(`#try-form button[type="submit"]`)))
	tb.wait(`#try-result .missing-credentials a`)
	if href := eval[string](tb, `document.querySelector('#try-result .missing-credentials a').getAttribute('href')`); href != "#/credentials/7" {
		t.Errorf("the link goes to %q", href)
	}
	tb.do(chromedp.Click(chromedp.CSS(`#try-result .missing-credentials a`)))
	tb.waitPage("credentials")
	tb.wait(`#cred-needed`)
	badge := func(key string) string { return tb.text(`#cred-needed .badge[data-key="` + key + `"]`) }
	if badge("STRIPE_KEY") != "missing" || badge("STRIPE_PASSWORD") != "missing" || !strings.Contains(tb.text(`#cred-needed`), "GetCustomers") {
		t.Fatalf("needed keys: %q", tb.text(`#cred-needed`))
	}
	tb.do(chromedp.Click(chromedp.CSS(`#cred-needed button.set-empty`)))
	tb.wait(`#cred-needed .badge[data-key="STRIPE_PASSWORD"].on`)
	if badge("STRIPE_KEY") != "missing" {
		t.Errorf("STRIPE_KEY: %q", badge("STRIPE_KEY"))
	}
	tb.screenshot("credentials-needed")
	// Deleting asks first, naming the tools that read it.
	tb.do(chromedp.Click(chromedp.CSS(`#cred-list button.danger`)))
	tb.confirm("“STRIPE_PASSWORD” of user 7? It cannot be shown again; the tools that read it (GetCustomers)")
	tb.wait(`#cred-needed .badge[data-key="STRIPE_PASSWORD"].off`)
}

// consolePages are the routes drawn by the translation test: every page
// of the navigation and those behind it, with data that fills them.
// ("run/" is completed with the id of the run the test makes.)
var consolePages = []string{"catalog", "plugin/lookup", "try/lookup", "import", "mcp", "credentials/7", "connections", "quotas/7",
	"approvals", "activity", "tokens", "add-plugin", "agents", "runs", "run/", "playground", "access/lookup/7"}

// TestEveryPageTranslatedInBrowser (issue 51 point 7): both languages
// have every key of the console's tables (errors and the pages other
// files register included), every API error code has a sentence, and
// every page — those registered later by other files too — drawn in
// Chinese, at desktop and phone width, asks for no string the language
// lacks and shows no English of the tables outside the engine's data.
func TestEveryPageTranslatedInBrowser(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, store.DialectSQLite)
	llm := openaitest.New(t)
	e := newEnv(t, st, newMasterKey(), func(s *api.Server) {
		s.Runner = &loop.Runner{Client: loop.NewClient(llm.Config()), Executor: s.Executor, DefaultModel: "scripted",
			LLMTimeout: 5 * time.Second, LLMBackoff: time.Millisecond}
	})
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/plugins", `{"name": "lookup", "title": "Look up", "description": "Look up a thing.", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
			"execution": {"method": "GET", "base_url": "https://api.example/lookup"}, "auth_config": {"type": "bearer", "token": "API_KEY"}}`},
		{"POST", "/v1/quotas/rules", `{"name": "daily", "calls": 10, "window": "day", "consequential": true}`},
		{"PUT", "/v1/credentials/7/API_KEY", `{"value": "key-0123456789"}`},
		{"POST", "/v1/tokens", `{"user_id": 7, "name": "clerk"}`},
		{"POST", "/v1/agents", `{"name": "customers", "description": "Customer service", "tools": {"names": ["lookup"]}}`},
	} {
		if code, body := do(t, admin, c.method, e.url+c.path, csrf, c.body); code/100 != 2 {
			t.Fatalf("%s %s: %d %v", c.method, c.path, code, body)
		}
	}
	// A run, in English, for the runs and the run's pages: what its
	// people and model wrote is data, not the console's to translate.
	llm.Script(openaitest.Turn{Content: "Nothing was found for that order."})
	code, run := do(t, admin, "POST", e.url+"/v1/runs", csrf, `{"user_id": 7, "plugin_names": ["lookup"], "messages": [{"role": "user", "content": "Look up the order please"}]}`)
	if code != http.StatusOK {
		t.Fatalf("run: %d %v", code, run)
	}
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	// The tables: every key in both languages, Chinese in Chinese.
	missing := eval[[]string](tb, `(() => {
		const out = [];
		for (const k of Object.keys(I18N.en)) if (!I18N['zh-CN'][k]) out.push('zh-CN lacks ' + k);
		for (const k of Object.keys(I18N['zh-CN'])) if (!I18N.en[k]) out.push('en lacks ' + k);
		for (const [k, v] of Object.entries(I18N['zh-CN'])) if (v === I18N.en[k] && /[a-z]{3}/.test(v)) out.push('zh-CN is English: ' + k);
		return out;
	})()`)
	for _, m := range missing {
		t.Error(m)
	}
	// Every error code the API describes has a sentence.
	for _, code := range describedErrorCodes(t) {
		if !eval[bool](tb, `!!I18N.en['err_`+code+`'] && !!I18N['zh-CN']['err_`+code+`']`) {
			t.Errorf("error code %s has no sentence", code)
		}
	}
	// Every page, those other files register included.
	var pages []string
	drawn := map[string]bool{}
	for _, route := range consolePages {
		if route == "run/" {
			route += run["run_id"].(string)
		}
		pages = append(pages, route)
		name, _, _ := strings.Cut(route, "/")
		drawn[name] = true
	}
	for _, name := range eval[[]string](tb, `Object.keys(PAGES)`) {
		if !drawn[name] {
			pages = append(pages, name)
		}
	}
	// One table holds every file's strings: a key two files say
	// differently changes one file's page.
	for _, c := range eval[[]string](tb, `clashes`) {
		t.Errorf("%s: two files say it differently", c)
	}
	// The scan of a page: the keys the language lacks that the page asked
	// for, and the English of the tables it shows outside the engine's
	// data (code, names, what the engine wrote: translate="no").
	scan := `(() => {
		const english = new Set(Object.entries(I18N.en).filter(([k, v]) => I18N['zh-CN'][k] !== v && /[a-z]{3}/.test(v)).map(([, v]) => v.trim()));
		const out = Array.from(untranslated).filter((k) => k.startsWith(document.documentElement.lang + ':'));
		const walk = document.createTreeWalker(document.getElementById('main'), NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			const s = n.textContent.trim();
			if (!s || n.parentElement.closest('code, pre, textarea, [translate="no"], [hidden]')) continue;
			if (english.has(s)) out.push('English: ' + s);
			// English written into a page, not through the tables: a
			// run of lower-case letters in a text without Chinese.
			else if (document.documentElement.lang === 'zh-CN' && !/\p{Script=Han}/u.test(s) && /[a-z]{4,}/.test(s)) out.push('English text: ' + s);
		}
		return out;
	})()`
	// The scan sees English where it is: in English, on every page.
	for _, route := range pages {
		name, _, _ := strings.Cut(route, "/")
		tb.open(e.url, route, name)
		if len(eval[[]string](tb, scan)) == 0 {
			t.Errorf("%s in English: the scan finds no English string of the tables", route)
		}
	}
	tb.setLang("zh-CN")
	for _, size := range viewports {
		tb.viewport(size.w, size.h, size.mobile)
		for _, route := range pages {
			name, _, _ := strings.Cut(route, "/")
			tb.open(e.url, route, name)
			left := eval[[]string](tb, scan)
			for _, l := range left {
				t.Errorf("%s at %s: %s", route, size.name, l)
			}
			tb.noSidewaysScroll(route + " at " + size.name)
		}
	}
	tb.setLang("en")
}

// describedErrorCodes are the error codes the API description lists.
func describedErrorCodes(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "x-error-codes" {
					for _, c := range x.([]any) {
						if s := c.(string); !seen[s] {
							seen[s] = true
							codes = append(codes, s)
						}
					}
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var doc any
	if err = json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc)
	if len(codes) < 20 {
		t.Fatalf("only %d error codes in the description", len(codes))
	}
	return codes
}

// TestDeleteAgentInBrowser (issue 51 point 8): deleting an agent asks
// first, naming what goes and what stays.
func TestDeleteAgentInBrowser(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, store.DialectSQLite)
	e := newEnv(t, st, newMasterKey())
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	if code, body := do(t, admin, "POST", e.url+"/v1/agents", csrf, `{"name": "customers", "description": "Customer service", "tools": {"names": ["nothing_yet"]}}`); code/100 != 2 {
		t.Fatalf("add agent: %d %v", code, body)
	}
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.open(e.url, "agents", "agents")
	tb.do(chromedp.Click(chromedp.CSS(`#agents button.danger`)))
	tb.confirm("“customers”? Runs and MCP sessions that ask for it are refused from then on; its 0 tools stay in the catalog")
	tb.wait(`#page[data-ready="true"] .empty`)
	if code, _ := do(t, admin, "GET", e.url+"/v1/agents/customers", "", ""); code != http.StatusNotFound {
		t.Errorf("after Delete: %d", code)
	}
}
