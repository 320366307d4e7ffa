package connections_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/connections/oauthtest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestProviderRedirectFollowsNowhere registers a provider whose token or
// revocation URL answers 307 to another origin: a client following it
// would send the code and PKCE verifier, or the refresh token, in the
// re-posted body to that origin. Nothing reaches it; the provider's own
// URLs are the only place they go.
func TestProviderRedirectFollowsNowhere(t *testing.T) {
	for _, tc := range []struct {
		name, field string
	}{
		{"token endpoint", "token_url"},
		{"revocation endpoint", "revocation_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
			var leaked atomic.Int64
			var got atomic.Value
			elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got.Store(string(b))
				leaked.Add(1)
				w.WriteHeader(http.StatusOK)
			}))
			t.Cleanup(elsewhere.Close)
			redirector := redirectTo(t, http.StatusTemporaryRedirect, elsewhere.URL)
			e.useProvider(tc.field, redirector.URL+"/"+tc.field)
			if n := leaked.Load(); n != 0 {
				body, _ := got.Load().(string)
				t.Fatalf("%d request(s) followed the provider's redirect to another origin, body %q", n, body)
			}
			if strings.Contains(e.logs.String(), oauthtest.ClientSecret) {
				t.Fatal("the client secret is in the logs")
			}
		})
	}
}

// useProvider registers provider acme with field (token_url or
// revocation_url) at url and uses it: a user connects (the callback is
// expected to fail 502 when the token URL is url) and, with the
// revocation URL at url, disconnects, which revokes.
func (e *env) useProvider(field, url string) {
	e.t.Helper()
	p := map[string]any{"name": "acme", "authorization_url": e.as.URL + "/authorize", "token_url": e.as.URL + "/token",
		"revocation_url": e.as.URL + "/revoke", "scopes": []string{"openid", "read"}, "client_id": oauthtest.ClientID,
		"client_secret": oauthtest.ClientSecret}
	p[field] = url
	if code, body := e.do("POST", "/v1/oauth/providers", adminToken, p); code != http.StatusOK {
		e.t.Fatalf("register provider: %d %v", code, body)
	}
	b := e.browser("account-1")
	code, page, _ := b.get(e.authorize(7, ""))
	if field == "token_url" {
		if code != http.StatusBadGateway {
			e.t.Fatalf("callback with that token endpoint: %d\n%s", code, page)
		}
		return
	}
	if code != http.StatusOK {
		e.t.Fatalf("confirmation page: %d\n%s", code, page)
	}
	if code, page := b.confirm(page, "connect"); code != http.StatusOK {
		e.t.Fatalf("confirm: %d\n%s", code, page)
	}
	if code, out := e.do("DELETE", "/v1/connections/acme?user_id=7", serviceToken, nil); code != http.StatusNoContent {
		e.t.Fatalf("disconnect: %d %v", code, out)
	}
}
