package console_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestImportURLClearedInBrowser: an import from a URL with its key in the
// query (a gateway's ?api_key=) leaves the field empty once applied, where
// the stored and listed location is redacted; a refused import and a dry
// run (Apply sends the URL again) keep what was typed. Before, the URL
// stayed in the field, key and all, after the import. The MCP page says
// which servers it cannot register, and Try it that it does not pause for
// an administrator.
func TestImportURLClearedInBrowser(t *testing.T) {
	needBrowser(t)
	const key = "typed-gw-key-0123456789"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/spec.json" || r.URL.Query().Get("api_key") != key {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(hostileSpec("http://" + r.Host)))
	}))
	defer up.Close()
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.open(e.url, "import", "import")
	field := func() string { return eval[string](tb, `document.querySelector('#import-url').value`) }

	refused := up.URL + "/missing.json?api_key=" + key
	tb.do(chromedp.SetValue(chromedp.CSS("#import-url"), refused), chromedp.Click(chromedp.CSS("#import-dry")))
	tb.wait("#import-result .error")
	if v := field(); v != refused {
		t.Errorf("after a refused import the field holds %q, want what was typed", v)
	}
	typed := up.URL + "/spec.json?api_key=" + key
	tb.do(chromedp.SetValue(chromedp.CSS("#import-url"), typed), chromedp.Click(chromedp.CSS("#import-dry")))
	tb.wait("#import-result .diff-added li")
	name := tb.text("#import-result .diff-added li")
	if v := field(); v != typed {
		t.Errorf("after the dry run the field holds %q, want what was typed (Apply sends it)", v)
	}
	tb.do(chromedp.Click(chromedp.CSS("#import-apply")))
	tb.wait("#import-result .ok")
	if v := field(); strings.Contains(v, key) {
		t.Errorf("after the import the field still holds the key: %q", v)
	}
	for _, s := range apiGet(t, e.url, "/v1/sources")["sources"].([]any) {
		if loc, _ := s.(map[string]any)["location"].(string); strings.Contains(loc, key) {
			t.Errorf("the source is listed with the key: %s", loc)
		}
	}

	// The MCP page names where a server with headers or auth_config is
	// registered; Try it says an administrator's call does not pause.
	note := func(sel string) string {
		return eval[string](tb, `(document.querySelector('`+sel+`') || {}).textContent || ''`)
	}
	for _, c := range []struct{ lang, mcp, try string }{
		{"en", "CLI or the API", "runs at once"},
		{"zh-CN", "命令行或 API", "立即执行"},
	} {
		tb.setLang(c.lang)
		tb.open(e.url, "mcp", "mcp")
		if got := note("#mcp-more"); !strings.Contains(got, c.mcp) || !strings.Contains(got, "blindexec mcp server add") || !strings.Contains(got, "docs/mcp.md") {
			t.Errorf("%s: the MCP page's note: %q", c.lang, got)
		}
		tb.open(e.url, "try/"+name, "try")
		if got := note("#try-at-once"); !strings.Contains(got, c.try) {
			t.Errorf("%s: Try it's note: %q", c.lang, got)
		}
	}
	tb.setLang("en")
}
