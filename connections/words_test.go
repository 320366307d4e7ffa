package connections_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/connections/oauthtest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// acceptLanguage sends a browser's Accept-Language on every request.
type acceptLanguage struct {
	lang string
	next http.RoundTripper
}

func (a acceptLanguage) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept-Language", a.lang)
	return a.next.RoundTrip(r)
}

// TestFlowPagesInChinese (issue 51 point 7): the flow's pages speak the
// language the browser asks for, styled as the console (its stylesheet,
// relative to the page, under the path prefix), and a connection made is
// in the administrators' log.
func TestFlowPagesInChinese(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	p := map[string]any{"name": "acme", "authorization_url": e.as.URL + "/authorize", "token_url": e.as.URL + "/token",
		"scopes": []string{"openid", "read"}, "client_id": oauthtest.ClientID, "client_secret": oauthtest.ClientSecret}
	if code, body := e.do("POST", "/v1/oauth/providers", adminToken, p); code != http.StatusOK {
		t.Fatalf("register provider: %d %v", code, body)
	}
	b := e.browser("account-1")
	b.client.Transport = acceptLanguage{"zh-CN,zh;q=0.9,en;q=0.8", http.DefaultTransport}
	code, page, h := b.get(e.authorize(7, ""))
	for _, want := range []string{`<html lang="zh-CN">`, "连接你的 acme 账号？", "把 acme 账号 <strong>account-1</strong> 连接到<strong>用户 7</strong>？", "授予的权限：", ">拒绝</button>",
		`<link rel="stylesheet" href="../console/assets/app.css">`} {
		if !strings.Contains(page, want) {
			t.Errorf("confirmation page lacks %q:\n%s", want, page)
		}
	}
	if code != http.StatusOK || h.Get("Content-Language") != "zh-CN" {
		t.Fatalf("confirmation page: %d %v", code, h)
	}
	if code, page := b.confirm(page, "connect"); code != http.StatusOK || !strings.Contains(page, "你的 acme 账号已连接") || !strings.Contains(page, "返回控制台的账号连接页") {
		t.Fatalf("connected page: %d\n%s", code, page)
	}
	// A link used twice: refused, in Chinese too, the stylesheet two
	// levels up from /oauth/start/{handle}.
	start := e.authorize(7, "")
	b.get(start)
	code, page, _ = b.get(start)
	if code != http.StatusGone && code != http.StatusNotFound || !strings.Contains(page, "登录链接") || !strings.Contains(page, `href="../../console/assets/app.css"`) {
		t.Errorf("a start link used twice: %d\n%s", code, page)
	}
	events, err := e.st.ListAdminEvents(t.Context(), store.AdminEventFilter{Kind: "connection"})
	if err != nil || len(events) != 1 || events[0].Actor != "user 7" || events[0].Via != "browser" ||
		!strings.Contains(events[0].Detail, `"account":"account-1"`) || !strings.Contains(events[0].Detail, `"op":"connection.connected"`) {
		t.Errorf("the administrators' log: %+v %v", events, err)
	}
}
