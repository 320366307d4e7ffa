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
			p := map[string]any{"name": "acme", "authorization_url": e.as.URL + "/authorize", "token_url": e.as.URL + "/token",
				"revocation_url": e.as.URL + "/revoke", "scopes": []string{"openid", "read"}, "client_id": oauthtest.ClientID,
				"client_secret": oauthtest.ClientSecret}
			p[tc.field] = redirector.URL + "/" + tc.field
			if code, body := e.do("POST", "/v1/oauth/providers", adminToken, p); code != http.StatusOK {
				t.Fatalf("register provider: %d %v", code, body)
			}
			b := e.browser("account-1")
			code, page, _ := b.get(e.authorize(7, ""))
			if tc.field == "token_url" {
				if code != http.StatusBadGateway {
					t.Fatalf("callback with a redirecting token endpoint: %d\n%s", code, page)
				}
			} else {
				if code != http.StatusOK {
					t.Fatalf("confirmation page: %d\n%s", code, page)
				}
				if code, page := b.confirm(page, "connect"); code != http.StatusOK {
					t.Fatalf("confirm: %d\n%s", code, page)
				}
				if code, out := e.do("DELETE", "/v1/connections/acme?user_id=7", serviceToken, nil); code != http.StatusNoContent {
					t.Fatalf("disconnect: %d %v", code, out)
				}
			}
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
