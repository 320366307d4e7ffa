package connections_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/connections/oauthtest"
	"github.com/blindexec/blindexec/internal/csp"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestConnectCallRefreshDisconnect plays a user's whole story against
// fosite: refused before connecting, the flow through a browser across
// two replicas, calls with the token, a refresh after expiry, a replayed
// callback, and a disconnect that revokes.
func TestConnectCallRefreshDisconnect(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, envOptions{replicas: 2, lifespan: time.Hour})
		e.registerProvider()
		e.addPlugin("acme_me", "read")

		// Not connected: refused, nothing sent, the provider and the
		// missing scopes named.
		out := e.call("acme_me", 7)
		code, details := errorOf(out)
		if code != "connection_required" || details["provider"] != "acme" || !sameList(details["missing_scopes"], "read") {
			t.Fatalf("before connecting: %v", out)
		}
		if e.apiHits.Load() != 0 {
			t.Fatalf("the API was called %d times before the user connected", e.apiHits.Load())
		}

		b := e.browser("alice@acme")
		code2, page, hdr := b.get(e.authorize(7, "Alice Example"))
		if code2 != http.StatusOK || !strings.Contains(page, "alice@acme") || !strings.Contains(page, "Alice Example") {
			t.Fatalf("confirmation page: %d\n%s", code2, page)
		}
		if hdr.Get("Content-Security-Policy") != csp.Policy || hdr.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("confirmation page headers: %v", hdr)
		}
		callback := b.last
		// The state is single use: the callback replayed in the same
		// browser (its cookie still there) is refused.
		if code, page, _ := b.get(callback); code != http.StatusBadRequest || !strings.Contains(page, "used already") {
			t.Fatalf("a callback replayed: %d\n%s", code, page)
		}
		if cs, _ := e.do("GET", "/v1/connections?user_id=7", serviceToken, nil); cs != http.StatusOK {
			t.Fatal(cs)
		}
		if _, list := e.do("GET", "/v1/connections?user_id=7", serviceToken, nil); len(list["connections"].([]any)) != 0 {
			t.Fatalf("a connection before the confirmation: %v", list)
		}
		if code, page := b.confirm(page, "connect"); code != http.StatusOK || !strings.Contains(page, "is connected") {
			t.Fatalf("confirm: %d\n%s", code, page)
		}
		access, refresh := e.tokens(7)
		if access == "" || refresh == "" {
			t.Fatal("no tokens stored")
		}

		_, list := e.do("GET", "/v1/connections?user_id=7", serviceToken, nil)
		cs := list["connections"].([]any)
		if len(cs) != 1 {
			t.Fatalf("connections: %v", list)
		}
		c := cs[0].(map[string]any)
		if c["provider"] != "acme" || c["state"] != "connected" || !sameList(c["scopes"], "openid", "read") || c["account"] != "alice@acme" || c["expires_at"] == nil {
			t.Fatalf("connection: %v", c)
		}

		// The confirmation and the callback are spent.
		if code, page := b.confirm(page, "connect"); code == http.StatusOK {
			t.Fatalf("a confirmation replayed was accepted:\n%s", page)
		}
		if code, _, _ := b.get(callback); code == http.StatusOK {
			t.Fatal("a callback replayed after the confirmation was accepted")
		}

		if o := outputOf(t, e.call("acme_me", 7)); o["account"] != "alice@acme" {
			t.Fatalf("call: %v", o)
		}
		if n := e.as.Refreshes.Load(); n != 0 {
			t.Fatalf("%d refreshes of a fresh token", n)
		}

		// Past its expiry the token is refreshed once, before the call.
		e.expire()
		if o := outputOf(t, e.call("acme_me", 7)); o["account"] != "alice@acme" {
			t.Fatalf("call after expiry: %v", o)
		}
		if n := e.as.Refreshed.Load(); n != 1 {
			t.Fatalf("%d refreshes after expiry, want 1", n)
		}
		newAccess, newRefresh := e.tokens(7)
		if newAccess == access || newRefresh == refresh {
			t.Fatal("the refresh did not store fosite's rotated tokens")
		}

		// Reconnecting replaces the connection and revokes the grant it
		// held.
		e.connect(7, "alice@acme")
		if _, _, err := e.as.Check(bearer(newAccess)); err == nil {
			t.Fatal("reconnecting left the previous grant alive at the provider")
		}
		prevAccess, prevRefresh := newAccess, newRefresh
		newAccess, newRefresh = e.tokens(7)

		// Disconnect revokes at the provider.
		if code, out := e.do("DELETE", "/v1/connections/acme?user_id=7", serviceToken, nil); code != http.StatusNoContent {
			t.Fatalf("disconnect: %d %v", code, out)
		}
		if e.as.Revocations.Load() < 1 {
			t.Fatal("disconnect revoked nothing at the provider")
		}
		if _, _, err := e.as.Check(bearer(newAccess)); err == nil {
			t.Fatal("the access token still works at the provider after a disconnect")
		}
		if code, _ := errorOf(e.call("acme_me", 7)); code != "connection_required" {
			t.Fatalf("after disconnect: %s", code)
		}
		if code, _ := e.do("DELETE", "/v1/connections/acme?user_id=7", serviceToken, nil); code != http.StatusNotFound {
			t.Fatalf("disconnecting twice: %d", code)
		}
		e.assertNoTokenShown(access, refresh, prevAccess, prevRefresh, newAccess, newRefresh)
	})
}

// assertNoTokenShown checks that no token reached a log line.
func (e *env) assertNoTokenShown(tokens ...string) {
	e.t.Helper()
	logs := e.logs.String()
	for _, tok := range tokens {
		if tok != "" && strings.Contains(logs, tok) {
			e.t.Fatalf("a token reached the logs")
		}
	}
}

func bearer(token string) *http.Request {
	r, _ := http.NewRequest("GET", "http://api.test/", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func sameList(v any, want ...string) bool {
	got, _ := v.([]any)
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestDeclineRevokes: declining the confirmation stores nothing and
// revokes the tokens the provider just issued.
func TestDeclineRevokes(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider()
	b := e.browser("alice@acme")
	_, page, _ := b.get(e.authorize(7, ""))
	if !strings.Contains(page, "to <strong>user 7</strong>") {
		t.Fatalf("without display_name the page names the engine user:\n%s", page)
	}
	if code, page := b.confirm(page, "decline"); code != http.StatusOK || !strings.Contains(page, "revoked") {
		t.Fatalf("decline: %d\n%s", code, page)
	}
	if n := e.as.Revocations.Load(); n != 2 {
		t.Fatalf("%d revocations after a decline, want 2 (refresh and access token)", n)
	}
	if _, list := e.do("GET", "/v1/connections?user_id=7", serviceToken, nil); len(list["connections"].([]any)) != 0 {
		t.Fatalf("declined but stored: %v", list)
	}
}

// TestFlowRefusals: every way a flow can go wrong lands on a page that
// says what happened, stores nothing, and shows the provider's words as
// text only.
func TestFlowRefusals(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{withIssuer: true})
	e.registerProvider()
	nothingStored := func(t *testing.T) {
		t.Helper()
		if cs, _ := e.st.ListOAuthConnections(context.Background(), 0); len(cs) != 0 {
			t.Fatalf("stored: %+v", cs)
		}
	}
	t.Run("start URL used twice", func(t *testing.T) {
		start := e.authorize(7, "")
		b := e.browser("a")
		b.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		if code, _, _ := b.get(start); code != http.StatusFound {
			t.Fatalf("first open: %d", code)
		}
		if code, page, _ := b.get(start); code != http.StatusGone || !strings.Contains(page, "used already") {
			t.Fatalf("second open: %d\n%s", code, page)
		}
	})
	t.Run("callback without the cookie", func(t *testing.T) {
		cb := e.stopAtProvider(e.browser("a"), e.authorize(7, ""))
		other := e.browser("a") // another browser: no flow cookie
		if code, page, _ := other.get(cb.String()); code != http.StatusForbidden || !strings.Contains(page, "cookie") {
			t.Fatalf("%d\n%s", code, page)
		}
		nothingStored(t)
	})
	t.Run("unknown state", func(t *testing.T) {
		b := e.browser("a")
		cb := e.stopAtProvider(b, e.authorize(7, ""))
		q := cb.Query()
		q.Set("state", "forged")
		cb.RawQuery = q.Encode()
		if code, page, _ := b.get(cb.String()); code != http.StatusBadRequest || !strings.Contains(page, "state is unknown") {
			t.Fatalf("%d\n%s", code, page)
		}
		nothingStored(t)
	})
	t.Run("another issuer (RFC 9207)", func(t *testing.T) {
		b := e.browser("a")
		cb := e.stopAtProvider(b, e.authorize(7, ""))
		q := cb.Query()
		if q.Get("iss") != e.as.Issuer {
			t.Fatalf("fosite's answer carries no iss: %s", cb)
		}
		q.Set("iss", "https://evil.example")
		cb.RawQuery = q.Encode()
		if code, page, _ := b.get(cb.String()); code != http.StatusBadRequest || !strings.Contains(page, "another issuer") {
			t.Fatalf("%d\n%s", code, page)
		}
		nothingStored(t)
	})
	t.Run("the provider's error, shown as text", func(t *testing.T) {
		b := e.browser("a")
		cb := e.stopAtProvider(b, e.authorize(7, ""))
		q := url.Values{"state": {cb.Query().Get("state")}, "error": {"access_denied"}, "error_description": {`<script>alert(1)</script><img src=x onerror=alert(2)>`}}
		code, page, hdr := b.get(e.lb.URL + "/oauth/callback?" + q.Encode())
		if code != http.StatusBadRequest || strings.Contains(page, "<script>") || strings.Contains(page, "<img") || !strings.Contains(page, "&lt;script&gt;") {
			t.Fatalf("%d\n%s", code, page)
		}
		if hdr.Get("Content-Security-Policy") != csp.Policy {
			t.Fatalf("no CSP: %v", hdr)
		}
		nothingStored(t)
	})
	t.Run("BLINDEXEC_BROWSER_URL unset", func(t *testing.T) {
		e2 := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{noBrowser: true})
		e2.registerProvider()
		code, out := e2.do("POST", "/v1/connections/acme/authorize", serviceToken, map[string]any{"user_id": 7})
		if c, _ := errorOf(out); code != http.StatusServiceUnavailable || c != "connections_not_configured" || !strings.Contains(out["error"].(map[string]any)["message"].(string), "BLINDEXEC_BROWSER_URL") {
			t.Fatalf("%d %v", code, out)
		}
	})
}

// TestProviderSecretNeverShown: the client secret is stored encrypted and
// no answer shows it; fields are checked.
func TestProviderSecretNeverShown(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	e := newEnv(t, st, envOptions{})
	e.registerProvider()
	for _, path := range []string{"/v1/oauth/providers", "/v1/oauth/providers/acme"} {
		code, out := e.do("GET", path, adminToken, nil)
		b, _ := json.Marshal(out)
		if code != http.StatusOK || strings.Contains(string(b), oauthtest.ClientSecret) || !strings.Contains(string(b), `"client_secret_set":true`) || !strings.Contains(string(b), `"pkce":true`) {
			t.Fatalf("%s: %d %s", path, code, b)
		}
	}
	row, err := st.GetOAuthProvider(context.Background(), "acme")
	if err != nil || strings.Contains(row.ClientSecret, oauthtest.ClientSecret) || !strings.HasPrefix(row.ClientSecret, "v1:"+e.keys.MasterKeyID()+":") || row.KeyID != e.keys.MasterKeyID() {
		t.Fatalf("stored secret: %+v %v", row, err)
	}
	bad := []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "a b", "authorization_url": "https://x/a", "token_url": "https://x/t", "client_id": "c"}, "name"},
		{map[string]any{"name": "x", "authorization_url": "ftp://x/a", "token_url": "https://x/t", "client_id": "c"}, "authorization_url"},
		{map[string]any{"name": "x", "authorization_url": "https://x/a", "token_url": "https://x/t"}, "client_id"},
		{map[string]any{"name": "x", "authorization_url": "https://x/a", "token_url": "https://x/t", "client_id": "c", "extra_params": map[string]string{"state": "s"}}, "extra_params.state"},
		{map[string]any{"name": "x", "authorization_url": "https://x/a", "token_url": "https://x/t", "client_id": "c", "scopes": []string{"a b"}}, "scopes[0]"},
	}
	for _, tt := range bad {
		code, out := e.do("POST", "/v1/oauth/providers", adminToken, tt.body)
		if c, _ := errorOf(out); code != http.StatusBadRequest || c != "invalid_provider" || !strings.Contains(out["error"].(map[string]any)["message"].(string), tt.field+":") {
			t.Errorf("%v: %d %v", tt.body, code, out)
		}
	}
	// Disabled without a client (an import's), then not connectable.
	if code, out := e.do("POST", "/v1/oauth/providers", adminToken, map[string]any{"name": "later", "authorization_url": "https://x/a", "token_url": "https://x/t", "enabled": false}); code != http.StatusOK {
		t.Fatalf("%d %v", code, out)
	}
	if code, out := e.do("POST", "/v1/connections/later/authorize", serviceToken, map[string]any{"user_id": 7}); code != http.StatusConflict {
		t.Fatalf("%d %v", code, out)
	}
	if code, _ := e.do("POST", "/v1/oauth/providers", serviceToken, map[string]any{}); code != http.StatusForbidden {
		t.Fatalf("the service registered a provider: %d", code)
	}
}

// TestTwoUsersTwoReplicas: two users connected to two accounts call
// through two replicas at once, across a refresh: each call carries its
// own user's token, and each connection is refreshed exactly once at the
// provider however many calls and replicas want it.
func TestTwoUsersTwoReplicas(t *testing.T) {
	st := testdb.Open(t, store.DialectMySQL)
	e := newEnv(t, st, envOptions{replicas: 2, lifespan: time.Hour})
	e.registerProvider()
	e.addPlugin("acme_me", "read")
	accounts := map[int64]string{7: "account-seven", 8: "account-eight"}
	for user, acct := range accounts {
		e.connect(user, acct)
	}
	check := func(round string) {
		var wg sync.WaitGroup
		for user, acct := range accounts {
			for i := range 8 {
				wg.Go(func() {
					// Alternate replicas explicitly, beside the balancer.
					r := e.replicas[i%2]
					out := callOn(t, r, "acme_me", user)
					o, _ := out["output"].(map[string]any)
					if out["ok"] != true || o["account"] != acct {
						t.Errorf("%s: user %d got %v", round, user, out)
					}
				})
			}
		}
		wg.Wait()
	}
	check("fresh tokens")
	if n := e.as.Refreshes.Load(); n != 0 {
		t.Fatalf("%d refreshes of fresh tokens", n)
	}
	e.expire()
	check("expired tokens")
	if n := e.as.Refreshes.Load(); n != 2 {
		t.Fatalf("%d refresh requests reached the provider for 2 connections, want exactly 2", n)
	}
}

// callOn calls through one replica's handler directly.
func callOn(t *testing.T, r *replica, name string, user int64) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "arguments": map[string]any{}, "user_id": user})
	req, _ := http.NewRequest("POST", "/v1/execute", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+serviceToken)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	r.handler.ServeHTTP(rec, req)
	var out map[string]any
	json.Unmarshal(rec.Body.Bytes(), &out)
	return out
}
