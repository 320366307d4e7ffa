package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestConsoleQuotasInBrowser: the administrator adds a quota rule on the
// Quotas page, and the page shows a user's use of it once a call counted.
func TestConsoleQuotasInBrowser(t *testing.T) {
	needBrowser(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) }))
	defer up.Close()
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	if code, body := do(t, admin, "POST", e.url+"/v1/plugins", csrf, `{"name": "refund", "description": "refund an order", "parameters": {"type": "object"}, "execution": {"method": "POST", "base_url": "`+up.URL+`"}}`); code != http.StatusCreated {
		t.Fatalf("add plugin: %d %v", code, body)
	}

	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.open(e.url, "quotas", "quotas")
	if s := tb.text("#page .empty"); s == "" {
		t.Error("no empty state without rules")
	}
	tb.do(chromedp.SendKeys(chromedp.CSS("#q-name"), "refund-daily"),
		chromedp.SetValue(chromedp.CSS("#q-kind"), "plugins_sel"),
		chromedp.SendKeys(chromedp.CSS("#q-value"), "refund"),
		chromedp.SendKeys(chromedp.CSS("#q-calls"), "20"),
		chromedp.Click(chromedp.CSS("#quota-form button")))
	tb.wait(`#quota-rules`)
	if s := tb.text("#quota-rules"); !strings.Contains(s, "refund-daily") || !strings.Contains(s, "20 calls a day") {
		t.Fatalf("rules table: %q", s)
	}
	if code, body := do(t, admin, "POST", e.url+"/v1/execute", csrf, `{"name": "refund", "arguments": {}, "user_id": 7}`); code != http.StatusOK {
		t.Fatalf("execute: %d %v", code, body)
	}
	tb.open(e.url, "quotas/7", "quotas")
	tb.wait(`#quota-use`)
	if s := tb.text("#quota-use"); !strings.Contains(s, "refund-daily") || !strings.Contains(s, "20 calls a day") || !strings.Contains(s, "1") {
		t.Fatalf("user 7's use: %q", s)
	}
	tb.screenshot("quotas")
}
