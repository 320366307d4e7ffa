package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// payloads are what a hostile spec or upstream writes where the console
// shows text: each would set window.__pwned if it ever ran.
var payloads = []string{
	`<script>window.__pwned='script'</script>`,
	`<img src=x onerror="window.__pwned='img'">`,
	`<svg onload="window.__pwned='svg'"></svg>`,
	`<a href="javascript:window.__pwned='link'">docs</a>`,
	`<img src="http://evil.example/leak.png">`,
}

const secretValue = "sk-console-secret-0123456789abcdef"

// mcpHeaderSecret is the value of an MCP server's static header.
const mcpHeaderSecret = "mcp-header-secret-9f8e7d6c"

// hostileSpec is an OpenAPI document aimed at upstream whose texts hold
// the payloads.
func hostileSpec(upstream string) string {
	all := strings.Join(payloads, " ")
	doc := map[string]any{
		"openapi": "3.0.3",
		"info":    map[string]any{"title": "Hostile " + payloads[0], "version": "1"},
		"servers": []any{map[string]any{"url": upstream}},
		"components": map[string]any{"securitySchemes": map[string]any{
			"key": map[string]any{"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
		"security": []any{map[string]any{"key": []any{}}},
		"paths": map[string]any{"/search": map[string]any{"get": map[string]any{
			"operationId": "searchThings", "summary": "Search " + payloads[1], "description": all,
			"parameters": []any{
				map[string]any{"name": "keyword", "in": "query", "required": true, "description": payloads[2],
					"schema": map[string]any{"type": "string"}},
				map[string]any{"name": "kind", "in": "query", "schema": map[string]any{"type": "string",
					"enum": []any{"plain", payloads[0]}}},
			},
			"responses": map[string]any{"200": map[string]any{"description": "ok"}},
		}}},
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// TestConsoleInBrowser walks the administrator's path in a real browser:
// sign in; import a hostile spec with a dry-run diff, then apply; try the
// plugin against a loopback upstream that records what it received; set
// a credential and find its value in nothing the browser received; and
// through it all nothing the spec or the upstream wrote ran (the sentinel,
// and no CSP violation but the test's own canary).
func TestConsoleInBrowser(t *testing.T) {
	needBrowser(t)
	var mu sync.Mutex
	var got []*http.Request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Clone(r.Context()))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"items": payloads})
	}))
	defer up.Close()

	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	tb := newTab(t)
	tb.do(chromedp.Navigate(e.url + "/console/"))

	tb.wait(`body[data-ready="signin"]`)
	tb.screenshot("signin")
	tb.signIn(e.url, adminToken)
	tb.waitPage("catalog")
	if s := tb.text("#page .empty"); !strings.Contains(s, "Import") {
		t.Errorf("empty catalog says %q, not what to do next", s)
	}

	// Import: the dry run shows the diff and writes nothing; apply writes it.
	tb.open(e.url, "import", "import")
	tb.do(chromedp.SetValue(chromedp.CSS("#import-doc"), hostileSpec(up.URL)),
		chromedp.SetValue(chromedp.CSS("#import-prefix"), "hx"),
		chromedp.Click(chromedp.CSS("#import-dry")),
	)
	tb.wait("#import-result .diff-added li")
	added := tb.text("#import-result .diff-added li")
	if n := len(apiGet(t, e.url, "/v1/plugins")["plugins"].([]any)); n != 0 {
		t.Fatalf("the dry run wrote %d plugins", n)
	}
	// The import streamed its progress: the bar reached the total.
	progressDone := func(want string) {
		t.Helper()
		if s := tb.text("#import-progress"); s != want || !eval[bool](tb, `(() => { const p = document.querySelector('#import-progress progress'); return p.value === p.max })()`) {
			t.Errorf("the import's progress reads %q, want %q at the end of the bar", s, want)
		}
	}
	progressDone("1 of 1 compared")
	tb.screenshot("import")
	tb.do(chromedp.Click(chromedp.CSS("#import-apply")))
	tb.wait("#import-result .ok")
	progressDone("1 of 1 written")
	plugins := apiGet(t, e.url, "/v1/plugins")["plugins"].([]any)
	if len(plugins) != 1 || plugins[0].(map[string]any)["name"] != added {
		t.Fatalf("applied %v, the dry run showed %q", plugins, added)
	}
	name := added
	// A dry run with another base URL says what would change: the execution.
	tb.do(chromedp.SetValue(chromedp.CSS("#import-base"), up.URL+"/v2"), chromedp.Click(chromedp.CSS("#import-dry")))
	tb.wait("#import-result .diff-changed li")
	if s := tb.text("#import-result .diff-changed li"); s != name+": execution" {
		t.Errorf("the dry run's changed plugin reads %q, want %q", s, name+": execution")
	}
	key := plugins[0].(map[string]any)["auth_config"].(map[string]any)["mapping"].([]any)[0].(map[string]any)["source"].(string)

	// The catalog with tool search, and the plugin page, texts shown as text.
	tb.open(e.url, "catalog/search things", "catalog")
	if s := tb.text("#page table"); !strings.Contains(s, name) {
		t.Errorf("tool search in the catalog: %q lacks %s", s, name)
	}
	tb.open(e.url, "plugin/"+name, "plugin")
	// Descriptions are shown as their text, tags removed; other texts
	// (an enum's values, the documents as JSON) as they are, as text.
	if s := tb.text("#page .description"); s != "Search docs" {
		t.Errorf("the plugin page shows the description %q, want its text without tags", s)
	}
	if s := tb.text("#page .tree"); strings.Contains(s, "<svg") || !strings.Contains(s, payloads[0]) {
		t.Errorf("the parameters read %q: a description with its tags, or an enum's value not as text", s)
	}
	if s := tb.text("#page"); !strings.Contains(s, strings.ReplaceAll(payloads[2], `"`, `\"`)) {
		t.Errorf("the parameters' JSON does not show the description as stored: %q", s)
	}
	tb.screenshot("plugin")
	// Edit: the API's field-named validation, shown by field.
	tb.do(chromedp.SetValue(chromedp.CSS("#plugin-doc"), `{"schema_version": "v1", "name": "`+name+`", "description": "d", "parameters": {"type": "object"}, "execution": {"method": "FETCH", "base_url": "`+up.URL+`"}, "auth_config": {"type": "none"}}`),
		chromedp.Click(chromedp.CSS("#plugin-save")))
	tb.wait("#page .error li")
	if s := tb.text("#page .error li"); !strings.HasPrefix(s, "execution.method") {
		t.Errorf("the edit's error does not name the field: %q", s)
	}

	// Credentials: set for user 7, shown as set, never as a value.
	tb.open(e.url, "credentials/7", "credentials")
	tb.do(chromedp.SendKeys(chromedp.CSS("#cred-key"), key), chromedp.SendKeys(chromedp.CSS("#cred-value"), secretValue),
		chromedp.Click(chromedp.CSS("#cred-form button")))

	tb.wait("#page table")
	if s := tb.text("#page table"); !strings.Contains(s, key) {
		t.Errorf("credentials page: %q lacks %s", s, key)
	}
	tb.screenshot("credentials")

	// Try it as user 7: the form from the schema, the call blind.
	tb.open(e.url, "try/"+name, "try")
	tb.do(chromedp.SendKeys(chromedp.CSS(`input[name="keyword"]`), "字节跳动"),
		chromedp.SetValue(chromedp.CSS("#run-user"), "7"),
		chromedp.Click(chromedp.CSS(`#try-form > button[type="submit"]`)),
	)
	tb.wait("#try-result pre + h2")
	mu.Lock()
	if len(got) != 1 || got[0].URL.Query().Get("keyword") != "字节跳动" || got[0].Header.Get("X-Api-Key") != secretValue {
		t.Errorf("upstream received %d requests: %v", len(got), got)
	}
	mu.Unlock()
	if s := tb.text("#try-result"); !strings.Contains(s, payloads[0]) {
		t.Errorf("the upstream's answer is not shown as text: %q", s)
	}
	// The request the engine sent, its credential header masked.
	if s := tb.text("#try-sent .sent-line"); !strings.HasPrefix(s, "GET "+up.URL+"/search?keyword=") {
		t.Errorf("the request sent reads %q", s)
	}
	if s := tb.text("#try-sent table"); !strings.Contains(s, "X-Api-Key[REDACTED] credential") || !strings.Contains(s, "User-Agent") {
		t.Errorf("the headers sent read %q", s)
	}
	eval[bool](tb, `(document.getElementById('try-sent').scrollIntoView(), true)`)
	tb.screenshot("try")

	// The execution record is written in the background.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(apiGet(t, e.url, "/v1/executions")["executions"].([]any)) > 0 {
			break
		}
	}
	tb.open(e.url, "activity", "activity")
	if s := tb.text("#page"); !strings.Contains(s, name) || !strings.Contains(s, "credential “"+key+"” of user 7 set") {
		t.Errorf("activity lacks the call or the audit log: %q", s)
	}
	tb.screenshot("activity")
	tb.open(e.url, "activity/outcome=error", "activity")
	if s := tb.text("#page .empty"); s == "" {
		t.Error("filtering on failed calls shows calls")
	}
	tb.open(e.url, "activity/plugin="+name+"&outcome=ok", "activity")
	if n := eval[int](tb, `document.querySelectorAll('#page table')[0].tBodies[0].rows.length`); n != 1 {
		t.Errorf("the filtered activity shows %d calls, want 1", n)
	}
	// A traced call shows its trace id, which lists the calls of the
	// trace.
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	if err := e.st.InsertExecutions(context.Background(), []store.Execution{{PluginName: name, Status: "ok", HTTPStatus: 200, TraceID: traceID}}); err != nil {
		t.Fatal(err)
	}
	tb.open(e.url, "activity", "activity")
	if href := eval[string](tb, `document.querySelector('#page a.trace-id').getAttribute('href')`); href != "#/activity/trace_id="+traceID {
		t.Errorf("the trace id links to %q", href)
	}
	tb.open(e.url, "activity/trace_id="+traceID, "activity")
	if v := eval[string](tb, `document.getElementById('f-trace_id').value`); v != traceID {
		t.Errorf("following a trace id filters on %q", v)
	}
	if n := eval[int](tb, `document.querySelectorAll('#page table')[0].tBodies[0].rows.length`); n != 1 || !strings.Contains(tb.text("#page table"), traceID) {
		t.Errorf("the trace's calls: %d rows, %q", n, tb.text("#page table"))
	}
	// MCP servers: register one (a loopback server), list its tools.
	med := mcptest.New(t)
	tb.open(e.url, "mcp", "mcp")
	if s := tb.text("#page .empty"); s == "" {
		t.Error("no empty state on the MCP page")
	}
	tb.do(chromedp.SendKeys(chromedp.CSS("#mcp-name"), "med"), chromedp.SendKeys(chromedp.CSS("#mcp-url"), med.Endpoint),
		chromedp.Click(chromedp.CSS("#mcp-form button")))
	tb.wait("#mcp-servers .tools")
	tb.do(chromedp.Click(chromedp.CSS("#mcp-servers .tools")))
	tb.wait("#mcp-detail table tbody tr") // at least one of its tools
	if s := tb.text("#mcp-detail"); !strings.Contains(s, "med") {
		t.Errorf("the MCP server's tools: %q", s)
	}
	tb.screenshot("mcp")
	// A server whose static header carries a secret (registered by the
	// test over the API): the browser lists it, the header's value never.
	req, _ := http.NewRequest("POST", e.url+"/v1/mcp/servers", strings.NewReader(
		`{"name": "keyed", "url": "`+med.Endpoint+`", "headers": {"X-Upstream-Key": "`+mcpHeaderSecret+`"}}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("register the keyed MCP server: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	tb.open(e.url, "catalog", "catalog") // (the same hash again would not reload the list)
	tb.open(e.url, "mcp", "mcp")
	tb.wait("#mcp-servers .tools")
	if s := tb.text("#mcp-servers"); !strings.Contains(s, "keyed") {
		t.Errorf("the MCP servers' list lacks the keyed server: %q", s)
	}

	// Nothing ran: the sentinel is unset, the page holds no element the
	// payloads would have made, and no request left for another host.
	if v := eval[string](tb, `String(window.__pwned)`); v != "undefined" {
		t.Errorf("a payload ran: window.__pwned = %s", v)
	}
	if n := eval[int](tb, `document.querySelectorAll('#page img, #page svg script, #page a[href^="javascript"], #page script').length`); n != 0 {
		t.Errorf("%d payload elements in the page", n)
	}
	// (Chromium's own background requests, refused, are not the page's.)
	for _, r := range proxy.refusedTargets() {
		if strings.Contains(r, "evil.example") {
			t.Errorf("the page tried to reach %s", r)
		}
	}

	// The secret is in no page, no response and no script the browser got.
	html := eval[string](tb, `document.documentElement.outerHTML + JSON.stringify(localStorage)`)
	if strings.Contains(html, secretValue) {
		t.Error("the credential's value is in the page")
	}
	answers := proxy.receivedFrom(strings.TrimPrefix(e.url, "http://"))
	if len(answers) < 20 {
		t.Fatalf("the proxy passed only %d answers from the console", len(answers))
	}
	// Not even masked: no last characters of the value either.
	tail := secretValue[len(secretValue)-6:]
	for _, a := range answers {
		if strings.Contains(a.body, secretValue) || strings.Contains(a.body, tail) || strings.Contains(a.body, "****") {
			t.Errorf("the credential's value, or its masked form, is in the answer to %s: %.200s", a.what, a.body)
		}
		if strings.Contains(a.body, mcpHeaderSecret) {
			t.Errorf("an MCP server's header value is in the answer to %s: %.200s", a.what, a.body)
		}
	}

	// The CSP reports violations to the console: a canary inline script
	// is blocked and reported, and it is the only report.
	eval[bool](tb, `(() => { const s = document.createElement('script'); s.textContent = 'window.__canary = 1'; document.body.append(s); return true })()`)
	deadline := time.Now().Add(10 * time.Second)
	for len(e.console.Reports()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if v := eval[string](tb, `String(window.__canary)`); v != "undefined" {
		t.Error("the CSP let an inline script run")
	}
	time.Sleep(200 * time.Millisecond)
	reports := e.console.Reports()
	if len(reports) == 0 {
		t.Fatal("no CSP violation report arrived for the canary")
	}
	for _, r := range reports {
		if !strings.Contains(string(r), "__canary") {
			t.Errorf("a CSP violation other than the canary: %s", r)
		}
	}

}

// TestConsoleUserSessionInBrowser: a per-user session sees its own data
// only, as the browser gets it: another user's credentials and the
// catalog are refused, in the page and by the API.
func TestConsoleUserSessionInBrowser(t *testing.T) {
	needBrowser(t)
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	if code, _ := do(t, admin, "PUT", e.url+"/v1/credentials/7/OTHER_USERS_KEY", csrf, `{"value":"`+secretValue+`"}`); code/100 != 2 {
		t.Fatalf("set user 7's credential: %d", code)
	}
	_, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 8, "name": "browser"}`)

	// A browser asking for Chinese (Accept-Language) gets the console in
	// Chinese, and switches it to English in place.
	tb := newTab(t)
	ua := eval[string](tb, `navigator.userAgent`)
	if _, err := chromedp.Call(tb.ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua, AcceptLanguage: "zh-CN,zh"}); err != nil {
		t.Fatal(err)
	}
	tb.signIn(e.url, tok["token"].(string))
	tb.waitPage("tools")
	if h := tb.text("#page h1"); h != "工具" {
		t.Errorf("with Accept-Language zh-CN the heading is %q, want 工具", h)
	}
	tb.screenshot("user-zh")
	tb.do(chromedp.SetValue(chromedp.CSS("#lang"), "en"))
	eval[bool](tb, `document.getElementById('lang').dispatchEvent(new Event('change')) || true`)
	tb.wait(`html[lang="en"] #page[data-ready="true"]`)
	if h := tb.text("#page h1"); h != "Tools" {
		t.Errorf("switched to English, the heading is %q", h)
	}
	if s := tb.text("#page .empty"); s == "" {
		t.Error("no empty state on the user's tools page")
	}
	tb.open(e.url, "credentials/7", "credentials")
	if s := tb.text("#page"); strings.Contains(s, "OTHER_USERS_KEY") || !strings.Contains(tb.text("#page .error"), "user_id") {
		t.Errorf("user 8's session on user 7's credentials shows %q", s)
	}
	tb.open(e.url, "catalog", "catalog")
	if s := tb.text("#page .error"); s == "" {
		t.Error("the catalog page opened for a per-user session")
	}
	for path, want := range map[string]float64{"/v1/credentials/7": 403, "/v1/plugins": 403, "/v1/executions?user_id=7": 403, "/v1/credentials/8": 200} {
		if got := eval[float64](tb, `fetch(`+strconvQuote(path)+`).then(r => r.status)`); got != want {
			t.Errorf("fetch %s from the user's session: %v, want %v", path, got, want)
		}
	}
	// The request sent upstream is the administrator's to see.
	if got := eval[float64](tb, `fetch('/console/api/session').then(r => r.json()).then(s => fetch('/v1/execute', {method: 'POST',
		headers: {'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf}, body: JSON.stringify({name: 'any', arguments: {}, trace: true})})).then(r => r.status)`); got != 403 {
		t.Errorf("a per-user session asking for the request sent: %v, want 403", got)
	}
	tb.screenshot("user")

}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
