package connections_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestFlowReplays: a callback or confirmation sent again, the CSRF token
// of one flow on another, and a state of excessive length or hostile
// bytes are refused with a page, and store nothing more.
func TestFlowReplays(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider()
	connected := func(t *testing.T) int {
		t.Helper()
		cs, err := e.st.ListOAuthConnections(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	post := func(b *browser, form url.Values) (int, string) {
		t.Helper()
		code, page := b.postForm(e.lb.URL+connections.ConfirmPath, form)
		return code, page
	}
	formOf := func(page, decision string) url.Values {
		f := url.Values{"decision": {decision}}
		for _, m := range formField.FindAllStringSubmatch(page, -1) {
			f.Set(m[1], m[2])
		}
		return f
	}

	t.Run("callback and confirmation sent again", func(t *testing.T) {
		b := e.browser("a")
		code, page, _ := b.get(e.authorize(7, ""))
		if code != http.StatusOK {
			t.Fatalf("confirmation page: %d\n%s", code, page)
		}
		callback := b.last
		form := formOf(page, "connect")
		if code, page := post(b, form); code != http.StatusOK {
			t.Fatalf("confirm: %d\n%s", code, page)
		}
		if code, page, _ := b.get(callback); code == http.StatusOK || strings.Contains(page, "<form") {
			t.Fatalf("callback replayed: %d\n%s", code, page)
		}
		if code, page := post(b, form); code == http.StatusOK {
			t.Fatalf("confirmation replayed: %d\n%s", code, page)
		}
		if n := connected(t); n != 1 {
			t.Fatalf("%d connections", n)
		}
	})
	t.Run("another flow's CSRF token", func(t *testing.T) {
		b := e.browser("b")
		_, pageA, _ := b.get(e.authorize(8, ""))
		_, pageB, _ := b.get(e.authorize(8, ""))
		a, other := formOf(pageA, "connect"), formOf(pageB, "connect")
		a.Set("csrf", other.Get("csrf"))
		if code, page := post(b, a); code != http.StatusForbidden {
			t.Fatalf("%d\n%s", code, page)
		}
		if n := connected(t); n != 1 {
			t.Fatalf("%d connections", n)
		}
	})
	for _, tc := range []struct{ name, state string }{
		{"a state of 64 KiB", strings.Repeat("s", 64<<10)},
		{"a state of hostile bytes", "\x00<script>alert(1)</script>\r\n'\"; DROP TABLE sys_ai_oauth_flow; --\xff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := e.browser("c")
			code, page, _ := b.get(e.lb.URL + connections.CallbackPath + "?" + url.Values{"state": {tc.state}, "code": {tc.state}}.Encode())
			if code != http.StatusBadRequest || strings.Contains(page, "<script>") {
				t.Fatalf("%d\n%s", code, page)
			}
			if n := connected(t); n != 1 {
				t.Fatalf("%d connections", n)
			}
		})
	}
}

// TestProviderDisabledMidFlow: a provider the administrator disables
// while a person is at its sign-in page connects nobody: the callback
// exchanges no code, and a confirmation already on screen revokes the
// tokens it holds.
func TestProviderDisabledMidFlow(t *testing.T) {
	for _, at := range []string{"callback", "confirmation"} {
		t.Run(at, func(t *testing.T) {
			e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
			e.registerProvider()
			disable := func() {
				t.Helper()
				p := map[string]any{"name": "acme", "authorization_url": e.as.URL + "/authorize", "token_url": e.as.URL + "/token",
					"revocation_url": e.as.URL + "/revoke", "client_id": "c", "enabled": false}
				if code, out := e.do("POST", "/v1/oauth/providers", adminToken, p); code != http.StatusOK {
					t.Fatalf("disable: %d %v", code, out)
				}
			}
			b := e.browser("a")
			var code int
			var page string
			if at == "callback" {
				cb := e.stopAtProvider(b, e.authorize(7, ""))
				disable()
				code, page, _ = b.get(cb.String())
			} else {
				_, confirmPage, _ := b.get(e.authorize(7, ""))
				disable()
				code, page = b.confirm(confirmPage, "connect")
				if n := e.as.Revocations.Load(); n == 0 {
					t.Fatal("the tokens obtained were not revoked")
				}
			}
			if code != http.StatusConflict || !strings.Contains(page, "disabled") {
				t.Fatalf("%d\n%s", code, page)
			}
			if cs, _ := e.st.ListOAuthConnections(context.Background(), 0); len(cs) != 0 {
				t.Fatalf("stored: %+v", cs)
			}
		})
	}
}

// TestBrowserURLWithPath: BLINDEXEC_BROWSER_URL may end in a path (the
// engine behind a reverse proxy under /engine): the flow's cookie, its
// confirmation form and its link back to the console stay under it.
func TestBrowserURLWithPath(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{prefix: "/engine"})
	e.registerProvider()
	e.addPlugin("acme_me", "read")
	b := e.browser("alice")
	code, page, _ := b.get(e.authorize(7, ""))
	if code != http.StatusOK || !strings.Contains(page, `action="/engine/oauth/confirm"`) {
		t.Fatalf("confirmation page: %d\n%s", code, page)
	}
	code, page = b.confirm(page, "connect")
	if code != http.StatusOK || !strings.Contains(page, "is connected") || !strings.Contains(page, `href="/engine/console/#/connections"`) {
		t.Fatalf("confirm: %d\n%s", code, page)
	}
	if o := outputOf(t, e.call("acme_me", 7)); o["account"] != "alice" {
		t.Fatalf("call: %v", o)
	}
}

// TestIssuerNotRegistered: a provider sending iss (RFC 9207) registered
// without its issuer connects nobody, and the administrator reads in the
// log what to register.
func TestIssuerNotRegistered(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider() // without issuer
	e.as.Issuer = e.as.URL
	code, page, _ := e.browser("a").get(e.authorize(7, ""))
	if code != http.StatusBadRequest || !strings.Contains(page, "issuer") {
		t.Fatalf("%d\n%s", code, page)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "register") || !strings.Contains(logs, e.as.URL) {
		t.Fatalf("the log does not say which issuer to register:\n%s", logs)
	}
}

// TestIssRequired: a provider whose metadata says it sends iss
// (authorization_response_iss_parameter_supported, RFC 9207) and whose
// answer comes without it, as a mix-up's attacker would forward it, is
// refused before the code is exchanged; with it, the flow goes on.
func TestIssRequired(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, envOptions{withIssuer: true, issSupported: true})
		e.registerProvider()
		b := e.browser("a")
		cb := e.stopAtProvider(b, e.authorize(7, ""))
		q := cb.Query()
		if q.Get("iss") != e.as.Issuer {
			t.Fatalf("fosite's answer carries no iss: %s", cb)
		}
		q.Del("iss")
		stripped := *cb
		stripped.RawQuery = q.Encode()
		if code, page, _ := b.get(stripped.String()); code != http.StatusBadRequest || !strings.Contains(page, "no iss") {
			t.Fatalf("an answer without iss: %d\n%s", code, page)
		}
		if n := e.as.Exchanges.Load(); n != 0 {
			t.Fatalf("%d code exchanges for an answer without iss, want none", n)
		}
		if cs, _ := e.st.ListOAuthConnections(context.Background(), 0); len(cs) != 0 {
			t.Fatalf("stored: %+v", cs)
		}
		// Only the person sees the page: the administrator, who may have
		// set the field for a provider whose metadata does not say so,
		// reads the log.
		if logs := e.logs.String(); !strings.Contains(logs, "without iss") || !strings.Contains(logs, "authorization_response_iss_parameter_supported") {
			t.Fatalf("the refusal is not logged for the administrator:\n%s", logs)
		}

		b = e.browser("a")
		code, page, _ := b.get(e.authorize(7, ""))
		if code != http.StatusOK || e.as.Exchanges.Load() != 1 {
			t.Fatalf("an answer with the registered iss: %d, %d exchanges\n%s", code, e.as.Exchanges.Load(), page)
		}
		if code, page := b.confirm(page, "connect"); code != http.StatusOK || !strings.Contains(page, "is connected") {
			t.Fatalf("confirm: %d\n%s", code, page)
		}
	})
}

// TestCallbackMalformedQuery: an answer whose query does not parse (a bad
// %-escape, a semicolon) is refused before anything of it is read, for
// every provider: net/http's reading drops such a pair, so an iss written
// that way was read as no iss (fuzz68's FuzzIssuerRefusal) and the code
// beside it exchanged.
func TestCallbackMalformedQuery(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{withIssuer: true})
	e.registerProvider()
	for _, bad := range []string{"iss=%zz", "iss=x;y"} {
		b := e.browser("a")
		cb := e.stopAtProvider(b, e.authorize(7, ""))
		q := cb.Query()
		q.Del("iss")
		malformed := *cb
		malformed.RawQuery = q.Encode() + "&" + bad
		if code, page, _ := b.get(malformed.String()); code != http.StatusBadRequest || !strings.Contains(page, "cannot be read") {
			t.Fatalf("an answer with %s: %d\n%s", bad, code, page)
		}
		if n := e.as.Exchanges.Load(); n != 0 {
			t.Fatalf("%d code exchanges for an answer with %s, want none", n, bad)
		}
	}
	if cs, _ := e.st.ListOAuthConnections(context.Background(), 0); len(cs) != 0 {
		t.Fatalf("stored: %+v", cs)
	}
}
