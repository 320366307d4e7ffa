package oauthtest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

// Browser is a person's browser for tests that drive a connection flow
// without chromium: a cookie jar, redirects followed, and an "acct"
// cookie at the authorization server naming the account it signs in as
// (read by a SetAccount function that looks for it). Added by i34b for
// the run, MCP and console tests of issue 34.
type Browser struct {
	t interface {
		Helper()
		Fatalf(string, ...any)
	}
	Client *http.Client
}

// Browser returns a browser signed in at s as account.
func (s *Server) Browser(t interface {
	Helper()
	Fatalf(string, ...any)
}, account string) *Browser {
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(s.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: "acct", Value: account, Path: "/"}})
	return &Browser{t: t, Client: &http.Client{Jar: jar}}
}

// Open opens u and returns the status, the text and the URL of the page
// reached.
func (b *Browser) Open(u string) (status int, page, at string) {
	b.t.Helper()
	resp, err := b.Client.Get(u)
	if err != nil {
		b.t.Fatalf("open %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Request.URL.String()
}

var (
	formAction = regexp.MustCompile(`<form method="post" action="([^"]*)"`)
	formField  = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)"`)
)

// Submit posts the form of page (reached at at) with decision, as the
// person's click on that button.
func (b *Browser) Submit(at, page, decision string) (status int, text string) {
	b.t.Helper()
	action := formAction.FindStringSubmatch(page)
	if action == nil {
		b.t.Fatalf("no form on the page at %s:\n%s", at, page)
	}
	base, _ := url.Parse(at)
	target, err := base.Parse(action[1])
	if err != nil {
		b.t.Fatalf("form action %q: %v", action[1], err)
	}
	form := url.Values{"decision": {decision}}
	for _, m := range formField.FindAllStringSubmatch(page, -1) {
		form.Set(m[1], m[2])
	}
	resp, err := b.Client.PostForm(target.String(), form)
	if err != nil {
		b.t.Fatalf("submit %s: %v", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Connect follows startURL through the authorization server to the
// engine's confirmation page and confirms; t fails unless the account is
// then connected.
func (b *Browser) Connect(startURL string) {
	b.t.Helper()
	status, page, at := b.Open(startURL)
	if status != http.StatusOK || !strings.Contains(page, `value="connect"`) {
		b.t.Fatalf("the confirmation page: %d at %s\n%s", status, at, page)
	}
	if status, text := b.Submit(at, page, "connect"); status != http.StatusOK || !strings.Contains(text, "is connected") {
		b.t.Fatalf("confirm: %d\n%s", status, text)
	}
}
