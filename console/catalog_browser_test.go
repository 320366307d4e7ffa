package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/corpus"
	"github.com/blindexec/blindexec/internal/githubcatalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// catalogSize is the catalog of the test: GitHub's and Stripe's documents,
// an MCP server's tools and plugins added by hand up to it.
const catalogSize = 1700

// bigCatalog fills e with GitHub's REST description and Stripe's (imported
// by URL from a loopback server, as an administrator would), the tools of
// an MCP server, and plugins added by hand up to catalogSize. It returns
// the import sources' ids by name.
func bigCatalog(t *testing.T, e *env) map[string]float64 {
	t.Helper()
	github, err := os.ReadFile(githubcatalog.Path(t))
	if err != nil {
		t.Fatal(err)
	}
	stripe := corpus.Read(t, "stripe/spec3.2023-09-12.63a67463.yaml.gz") // 468 operations
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/github/api.github.com.json":
			w.Write(github)
		case "/stripe/openapi/spec3.yaml":
			w.Write(stripe)
		default:
			http.NotFound(w, r)
		}
	}))
	defer docs.Close()
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	ids := map[string]float64{}
	for name, path := range map[string]string{"github": "/github/api.github.com.json", "stripe": "/stripe/openapi/spec3.yaml"} {
		start := time.Now()
		code, res := do(t, admin, "POST", e.url+"/v1/plugins/import/openapi", csrf, `{"url": "`+docs.URL+path+`"}`)
		if code != http.StatusOK {
			t.Fatalf("import %s: %d %v", name, code, res)
		}
		ids[name] = res["source_id"].(float64)
		t.Logf("imported %s: %d plugins in %v", name, len(res["added"].([]any)), time.Since(start).Round(time.Millisecond))
	}
	med := mcptest.New(t)
	if code, res := do(t, admin, "POST", e.url+"/v1/plugins/import/mcp", csrf, `{"url": "`+med.Endpoint+`"}`); code != http.StatusOK {
		t.Fatalf("import the MCP server's tools: %d %v", code, res)
	} else {
		ids["mcp"] = res["source_id"].(float64)
	}
	have := int(apiGet(t, e.url, "/v1/plugins?limit=1")["total"].(float64))
	if have > catalogSize {
		t.Fatalf("the imports alone make %d plugins, over %d", have, catalogSize)
	}
	for i := have; i < catalogSize; i++ {
		// Described in HTML, as imports stored Stripe's descriptions before
		// they stored text: the console shows whatever is stored as text.
		doc := fmt.Sprintf(`{"name": "internal_reportJob%04d", "title": "Internal report %d", "description": "<p>Runs the internal report job number %d for the <a href=\"/docs/finance\">finance team</a>; see <code>period</code>.</p>",
			"parameters": {"type": "object"}, "execution": {"method": "POST", "base_url": "http://127.0.0.1:9/reports"}}`, i, i, i)
		if code, res := do(t, admin, "POST", e.url+"/v1/plugins", csrf, doc); code != http.StatusCreated {
			t.Fatalf("create a plugin by hand: %d %v", code, res)
		}
	}
	return ids
}

// layoutProblems measures the drawn page (not its DOM): the page and its
// tables do not scroll sideways; every header, badge and button holds on
// one line (its height against its line height); no word of the
// catalog's cells but the description, of the pager or of the filters
// breaks across lines (each word's boxes, from a Range, share one line);
// descriptions take at most two lines; every placeholder fits its input
// (its width with the input's font, against the input's room).
const layoutProblems = `(() => {
  const out = [];
  const de = document.documentElement;
  if (de.scrollWidth > de.clientWidth) out.push('the page scrolls sideways: ' + de.scrollWidth + ' > ' + de.clientWidth);
  for (const w of document.querySelectorAll('#page .table-wrap')) {
    if (w.scrollWidth > w.clientWidth + 1) out.push('a table scrolls sideways: ' + w.scrollWidth + ' > ' + w.clientWidth);
  }
  const px = (v) => parseFloat(v) || 0;
  const line = (e) => { const cs = getComputedStyle(e); return px(cs.lineHeight) || px(cs.fontSize) * 1.2; };
  const inner = (e) => { const cs = getComputedStyle(e); return e.getBoundingClientRect().height - px(cs.paddingTop) - px(cs.paddingBottom) - px(cs.borderTopWidth) - px(cs.borderBottomWidth); };
  const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 2 && r.height > 2; };
  const lines = (sel, what) => {
    for (const e of document.querySelectorAll(sel)) {
      if (shown(e) && inner(e) > line(e) * 1.5) out.push(what + ' "' + e.textContent.trim() + '" takes ' + inner(e).toFixed(1) + 'px for a line of ' + line(e).toFixed(1) + 'px');
    }
  };
  lines('#page th', 'header');
  lines('#page .badge', 'badge');
  lines('#page button', 'button');
  for (const c of document.querySelectorAll('#page td.desc .clamp')) {
    if (inner(c) > line(c) * 2 + 1) out.push('a description takes ' + inner(c).toFixed(1) + 'px, over two lines');
  }
  const range = document.createRange();
  for (const root of document.querySelectorAll('#page table.catalog tbody, #page .pager, #page .filters')) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n; (n = walk.nextNode());) {
      if (n.parentElement.closest('td.desc') || !shown(n.parentElement)) continue;
      for (const m of n.data.matchAll(/\S+/g)) {
        range.setStart(n, m.index);
        range.setEnd(n, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.bottom)));
        if (tops.size > 1) out.push('"' + m[0] + '" breaks across ' + tops.size + ' lines');
      }
    }
  }
  const ctx = document.createElement('canvas').getContext('2d');
  for (const i of document.querySelectorAll('#page input[placeholder]')) {
    const cs = getComputedStyle(i);
    ctx.font = cs.fontStyle + ' ' + cs.fontWeight + ' ' + cs.fontSize + ' ' + cs.fontFamily;
    const need = ctx.measureText(i.placeholder).width, room = i.clientWidth - px(cs.paddingLeft) - px(cs.paddingRight);
    if (need > room) out.push('the placeholder "' + i.placeholder + '" needs ' + need.toFixed(1) + 'px, the input has ' + room.toFixed(1));
  }
  return out;
})()`

// TestCatalogAtSizeInBrowser (issue 39) opens the catalog of 1,700
// plugins (GitHub's and Stripe's documents among them) in chromium: the
// browser receives one page of rows, never the catalog; the pager, page
// size, filters and search page through it; the layout is measured at
// 1280 px and at phone width, in English and Chinese; descriptions are
// text with their HTML tags removed; and the time from navigation to an
// interactive first page is reported.
func TestCatalogAtSizeInBrowser(t *testing.T) {
	needBrowser(t)
	testdb.Each(t, catalogAtSize)
}

func catalogAtSize(t *testing.T, st *store.Store) {
	e := newEnv(t, st, newMasterKey())
	ids := bigCatalog(t, e)
	host := strings.TrimPrefix(e.url, "http://")
	tb := newTab(t)
	tb.signIn(e.url, adminToken)

	// until polls a JavaScript condition: a click or a hash change draws
	// the page after it returns.
	until := func(cond string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !eval[bool](tb, cond); time.Sleep(25 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("still not %s after 20s", cond)
			}
		}
	}
	// reopen loads the console afresh on a route (the same hash again
	// would not draw the page again).
	reopen := func(route string) {
		t.Helper()
		tb.do(chromedp.Navigate("about:blank"))
		tb.open(e.url, route, "catalog")
	}
	rows := func() int { return eval[int](tb, `document.querySelectorAll('#page table.catalog tbody tr').length`) }
	// received are the plugins' answers the browser got since n answers.
	received := func(since int) []map[string]any {
		var out []map[string]any
		for _, a := range proxy.receivedFrom(host)[since:] {
			if strings.HasPrefix(a.what, "GET /v1/plugins?") {
				var m map[string]any
				if err := json.Unmarshal([]byte(a.body), &m); err != nil {
					t.Fatalf("%s: %v", a.what, err)
				}
				out = append(out, m)
			}
		}
		return out
	}

	// Fast at size: from a navigation to the first page drawn and
	// interactive (the page's own mark, after its handlers are set),
	// measured, reported; asserted is what the browser received.
	var took []float64
	for range 3 {
		before := len(proxy.receivedFrom(host))
		reopen("catalog")
		ms := eval[float64](tb, `performance.getEntriesByName('catalog-ready')[0].startTime`)
		took = append(took, ms)
		t.Logf("  %.0f ms: %s", ms, eval[string](tb, `(() => {
			const nav = performance.getEntriesByType('navigation')[0];
			const res = (part) => performance.getEntriesByType('resource').find((r) => r.name.includes(part));
			const p = res('/v1/plugins?'), s = res('/console/api/session');
			return 'document ' + nav.domContentLoadedEventEnd.toFixed(0) + ' ms, session answered at ' + s.responseEnd.toFixed(0) +
				' ms, the page of plugins asked at ' + p.startTime.toFixed(0) + ' ms and read in ' + p.duration.toFixed(0) + ' ms (' +
				(p.decodedBodySize / 1024).toFixed(0) + ' KiB)';
		})()`))
		got := received(before)
		if len(got) != 1 || len(got[0]["plugins"].([]any)) != 50 || got[0]["total"] != float64(catalogSize) {
			t.Fatalf("the first page's answers: %d, want one of 50 plugins of %d", len(got), catalogSize)
		}
		if n := rows(); n != 50 {
			t.Errorf("the first page shows %d rows, want 50", n)
		}
	}
	if whole, err := json.Marshal(apiGet(t, e.url, "/v1/plugins")); err == nil {
		t.Logf("  (the whole catalog, which the page asked for before it paged: %d KiB)", len(whole)/1024)
	}
	slices.Sort(took)
	t.Logf("catalog of %d plugins on %s: first page (50 rows) interactive %.0f ms after navigation (median of 3; %.0f–%.0f ms)", catalogSize, st.Dialect(), took[1], took[0], took[2])
	if s := tb.text("#page .pager .range"); s != "1–50 of 1,700" {
		t.Errorf("the pager reads %q", s)
	}

	// The pager and the page size.
	tb.do(chromedp.Click(chromedp.CSS(`#page .pager button[aria-label="Next"]`)))
	until(`document.querySelector('#page[data-ready="true"] .pager .range')?.textContent === '51–100 of 1,700'`)
	if rows() != 50 || eval[string](tb, `location.hash`) != "#/catalog/size=50&page=2" {
		t.Errorf("the second page: %d rows at %s", rows(), eval[string](tb, `location.hash`))
	}
	chooseSize := func(size string) {
		t.Helper()
		tb.do(chromedp.SetValue(chromedp.CSS("#f-size"), size))
		eval[bool](tb, `document.getElementById('f-size').dispatchEvent(new Event('change')) || true`)
		until(`location.hash === '#/catalog/size=` + size + `' && document.querySelectorAll('#page[data-ready="true"] table.catalog tbody tr').length === ` + size)
	}
	chooseSize("100")
	reopen("catalog/page=17&size=100")
	if s := tb.text("#page .pager .range"); s != "1,601–1,700 of 1,700" || rows() != 100 ||
		!eval[bool](tb, `document.querySelector('#page .pager button[aria-label="Next"]').disabled`) {
		t.Errorf("the last page reads %q with %d rows", s, rows())
	}
	reopen("catalog") // the size chosen is remembered
	if rows() != 100 {
		t.Errorf("the page size was not remembered: %d rows", rows())
	}
	chooseSize("50")
	tb.do(chromedp.Navigate("about:blank"), chromedp.Navigate(e.url+"/console/#/catalog/page=99"))
	until(`document.querySelector('#page[data-ready="true"] .pager .range')?.textContent === '1,651–1,700 of 1,700'`)
	if h := eval[string](tb, `location.hash`); h != "#/catalog/page=34&size=50" {
		t.Errorf("past the last page the console went to %s, want the last page", h)
	}

	// Filters: source, type, status, and search results paged the same way.
	for _, c := range []struct {
		route, total string
		check        string // true for every row
	}{
		{fmt.Sprintf("catalog/source=%v", ids["stripe"]), "468", `r.querySelector('.from').textContent === 'spec3.yaml'`},
		{"catalog/type=mcp", "", `r.querySelector('td.source .badge').textContent === 'MCP'`},
		{"catalog/source=none&type=http", "", `r.querySelector('.from').textContent === 'Added by hand'`},
		{"catalog/q=create+a+repository", "", `r.querySelector('td.status .badge.on') !== null`},
	} {
		reopen(c.route)
		s := tb.text("#page .pager .range")
		if c.total != "" && !strings.HasSuffix(s, " of "+c.total) {
			t.Errorf("%s: the pager reads %q, want a total of %s", c.route, s, c.total)
		}
		if n := eval[int](tb, `[...document.querySelectorAll('#page table.catalog tbody tr')].filter((r) => !(`+c.check+`)).length`); n != 0 || rows() == 0 {
			t.Errorf("%s: %d of %d rows fail %s", c.route, n, rows(), c.check)
		}
	}
	// The catalog's search is tool search's ranking.
	best := apiGet(t, e.url, "/v1/tools/search?q=create+a+repository&limit=1")["results"].([]any)[0].(map[string]any)["name"]
	if s := tb.text("#page table.catalog tbody tr td.name"); s != best {
		t.Errorf("the catalog's search for %q shows %s first, tool search %s", "create a repository", s, best)
	}

	// The consequential filter (issue 33) shows the page of what the API
	// counts in that class, and keeps its choice in the URL.
	for _, class := range []string{"true", "false"} {
		want := int(apiGet(t, e.url, "/v1/plugins?limit=1&consequential="+class)["total"].(float64))
		reopen("catalog/consequential=" + class)
		if s := tb.text("#page .pager .range"); want == 0 || !strings.HasSuffix(s, " of "+thousands(want)) {
			t.Errorf("consequential=%s: the pager reads %q, want a total of %d", class, s, want)
		}
		if v := eval[string](tb, `document.querySelector('#f-consequential').value`); v != class || rows() == 0 {
			t.Errorf("consequential=%s: the filter shows %q, %d rows", class, v, rows())
		}
	}

	// Text, not markup: descriptions stored as HTML (the plugins added by
	// hand; imports now store text) arrive as HTML and are shown as their
	// text.
	before := len(proxy.receivedFrom(host))
	reopen("catalog/source=none&type=http")
	html := 0
	for _, m := range received(before) {
		for _, p := range m["plugins"].([]any) {
			if regexp.MustCompile(`<(p|a|code)\b`).MatchString(p.(map[string]any)["description"].(string)) {
				html++
			}
		}
	}
	if html == 0 {
		t.Fatal("no description of the page holds HTML: the test shows nothing")
	}
	if n := eval[int](tb, `[...document.querySelectorAll('#page td.desc')].filter((d) => /<\/?[a-z]/i.test(d.textContent) || d.querySelector(':not(div):not(strong)')).length`); n != 0 {
		t.Errorf("%d descriptions (of the %d sent with HTML) show tags or elements", n, html)
	}
	t.Logf("the first page of plugins added by hand: %d descriptions sent with HTML, shown as text", html)

	// Readable: measured at 1280 px and at phone width, in both languages,
	// on the whole catalog, Stripe's documents and a search. Chinese is
	// measured in Chinese glyphs, not a fallback's boxes.
	if out, _ := exec.Command("fc-list", ":lang=zh").Output(); len(out) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set and no CJK font is installed: the Chinese layout cannot be measured (apt-get install fonts-noto-cjk)")
		}
		t.Log("no CJK font (apt-get install fonts-noto-cjk): Chinese is measured in the fallback's boxes")
	}
	for _, lang := range []string{"en", "zh-CN"} {
		eval[bool](tb, `(localStorage.setItem('blindexec.lang', '`+lang+`'), true)`)
		for _, size := range viewports {
			tb.viewport(size.w, size.h, size.mobile)
			for _, route := range []string{"catalog", fmt.Sprintf("catalog/source=%v", ids["stripe"]), "catalog/q=list+issues", "catalog/type=mcp"} {
				reopen(route)
				if got := eval[string](tb, `document.documentElement.lang`); got != lang {
					t.Fatalf("the console is in %q, want %q", got, lang)
				}
				for _, p := range eval[[]string](tb, layoutProblems) {
					t.Errorf("%s, %s, #/%s: %s", lang, size.name, route, p)
				}
			}
		}
		if _, err := chromedp.Call(tb.ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
		reopen("catalog")
		if lang == "en" {
			tb.screenshot("catalog")
		} else {
			tb.screenshot("catalog-zh")
		}
	}
	eval[bool](tb, `(localStorage.setItem('blindexec.lang', 'en'), true)`)

	// The browser never received the catalog: no answer listed more than a
	// page of the largest size.
	for _, m := range received(0) {
		if n := len(m["plugins"].([]any)); n > 100 {
			t.Errorf("the browser received %d plugins in one answer", n)
		}
	}

	// A per-user session's tools, as the LLM sees them, page the same way.
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	_, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 9, "name": "catalog"}`)
	user := newTab(t)
	user.signIn(e.url, tok["token"].(string))
	enabled := int(apiGet(t, e.url, "/v1/plugins?limit=1&status=0")["total"].(float64))
	found := int(apiGet(t, e.url, "/v1/tools/search?q=list+issues")["total"].(float64))
	start := len(proxy.receivedFrom(host))
	for _, c := range []struct{ route, rng string }{
		{"tools", "1–50 of " + thousands(enabled)},
		{"tools/page=2", "51–100 of " + thousands(enabled)},
		{"tools/q=list+issues", "1–50 of " + thousands(found)},
		{"tools/q=list+issues&page=3", "101–150 of " + thousands(found)},
	} {
		user.do(chromedp.Navigate("about:blank"))
		user.open(e.url, c.route, "tools")
		if s := user.text("#page .pager .range"); s != c.rng {
			t.Errorf("#/%s: the pager reads %q, want %q", c.route, s, c.rng)
		}
		if n := eval[int](user, `document.querySelectorAll('#page h2.tool').length`); n != 50 {
			t.Errorf("#/%s shows %d tools, want 50", c.route, n)
		}
		for _, p := range eval[[]string](user, layoutProblems) {
			t.Errorf("#/%s: %s", c.route, p)
		}
	}
	for _, a := range proxy.receivedFrom(host)[start:] {
		if !strings.HasPrefix(a.what, "GET /v1/tools") {
			continue
		}
		var m struct {
			Tools   []any `json:"tools"`
			Results []any `json:"results"`
			Total   int   `json:"total"`
		}
		if err := json.Unmarshal([]byte(a.body), &m); err != nil || len(m.Tools)+len(m.Results) != 50 || m.Total < 50 {
			t.Errorf("%s: %d tools and %d results of %d, want a page of 50 (%v)", a.what, len(m.Tools), len(m.Results), m.Total, err)
		}
	}
}

// TestTextHelpersInBrowser: the page's plainText (a description as text)
// and breakable (where a name may wrap), run in the browser.
func TestTextHelpersInBrowser(t *testing.T) {
	needBrowser(t)
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	for _, c := range []struct{ in, want string }{
		{`<p>Retrieves the details of an account.</p>`, "Retrieves the details of an account."},
		{`<p>Creates a <a href="/docs/connect">Connect</a> account.</p><p>Second.</p>`, "Creates a Connect account. Second."},
		{`Use <code>expand[]</code> &amp; <strong>limit</strong>&nbsp;&lt;100&gt;`, "Use expand[] & limit <100>"},
		{`Line<br>break<br/>here`, "Line break here"},
		{`<script>window.__pwned = 1</script>Safe<style>p{}</style> text<!-- note -->`, "Safe text"},
		{`Emoji &#x1F600; and &#233;t&eacute;`, "Emoji 😀 and ét&eacute;"},
		{`a < b and c > d`, "a < b and c > d"},
		{`unclosed <a href="x`, "unclosed"},
		{`not entities: &constructor; &toString; &__proto__;`, "not entities: &constructor; &toString; &__proto__;"},
		{"", ""},
	} {
		if got := eval[string](tb, `plainText(`+strconvQuote(c.in)+`)`); got != c.want {
			t.Errorf("plainText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// A schema's property named __proto__ is an argument like any other:
	// set on a plain object it changed the object's prototype, or was
	// dropped for a string, and never reached the call.
	protoArgs := `(() => { const f = field('x', JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"},"a":{"type":"string"}}}'), true);
		for (const i of f.node.querySelectorAll('input')) i.value = 'v';
		return JSON.stringify(f.get()); })()`
	if got, want := eval[string](tb, protoArgs), `{"__proto__":"v","a":"v"}`; got != want {
		t.Errorf("a schema's __proto__ property: arguments %s, want %s", got, want)
	}
	for in, want := range map[string]string{
		"repos_list-for-org":          "repos_|list-|for-|org",
		"GetCustomersCustomerSources": "Get|Customers|Customer|Sources",
		"internal_reportJob0042":      "internal_|report|Job0042",
		"charges.retrieve":            "charges.|retrieve",
		"issues/list":                 "issues/|list",
		"APIKeys":                     "APIKeys",
		"hx_searchThings":             "hx_|search|Things",
	} {
		if got := eval[string](tb, `breakable(`+strconvQuote(in)+`).map((n) => (typeof n === 'string' ? n : '|')).join('')`); got != want {
			t.Errorf("breakable(%q) = %q, want %q", in, got, want)
		}
	}
}

// thousands writes n as English does, 1,700.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
