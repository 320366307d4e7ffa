package connections_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestInlinePluginsCannotLoosen: a caller's inline plugin naming a
// provider cannot change where, how or with what the token goes, and a
// catalog API redirecting off its origin does not take the token along.
func TestInlinePluginsCannotLoosen(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider()
	e.addPlugin("acme_me", "read")
	var bearers, hits atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "" {
			bearers.Add(1)
		}
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(elsewhere.Close)
	e.addPluginAt("acme_redir", redirectTo(t, http.StatusFound, elsewhere.URL).URL+"/steal", "read")
	e.connect(7, "alice")
	access, _ := e.tokens(7)

	plugin := func(name, method, base, provider string, headers map[string]any) map[string]any {
		p := map[string]any{"name": name, "description": "d", "parameters": map[string]any{"type": "object", "properties": map[string]any{}},
			"execution":   map[string]any{"method": method, "base_url": base},
			"auth_config": map[string]any{"type": "oauth2", "oauth2": map[string]any{"grant": "authorization_code", "provider": provider, "scopes": []string{"read"}}}}
		if headers != nil {
			p["execution"].(map[string]any)["headers"] = headers
		}
		return p
	}
	me := e.api.URL + "/me"
	apiHits := e.apiHits.Load()
	for _, tc := range []struct {
		name   string
		plugin map[string]any
	}{
		{"another path on the catalog origin", plugin("acme_me", "GET", e.api.URL+"/admin", "acme", nil)},
		{"another method", plugin("acme_me", "DELETE", me, "acme", nil)},
		{"added headers", plugin("acme_me", "GET", me, "acme", map[string]any{"X-Forward-To": elsewhere.URL})},
		{"another provider", plugin("acme_me", "GET", me, "other", nil)},
		{"a name the catalog lacks", plugin("acme_steal", "GET", me, "acme", nil)},
		{"another catalog plugin's name", plugin("acme_redir", "GET", me, "acme", nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, out := e.do("POST", "/v1/execute", serviceToken, map[string]any{"plugin": tc.plugin, "arguments": map[string]any{}, "user_id": 7})
			if code, _ := errorOf(out); code != "credential_not_bound" {
				t.Fatalf("got %v", out)
			}
			if b, _ := json.Marshal(out); strings.Contains(string(b), access) {
				t.Fatal("the token is in the answer")
			}
		})
	}
	if n := e.apiHits.Load() - apiHits; n != 0 {
		t.Fatalf("refused inline plugins reached the API %d times", n)
	}
	// The catalog plugin's API redirects to another origin: the request
	// goes, the bearer token does not.
	e.call("acme_redir", 7)
	if hits.Load() != 1 || bearers.Load() != 0 {
		t.Fatalf("the other origin got %d requests, %d with a bearer token", hits.Load(), bearers.Load())
	}
}

// TestUnauthorizedOffOrigin: a catalog API redirecting to another origin
// that answers 401 gets no token there (the redirect drops it), so the
// 401 is the call's answer: no refresh, no refusal as if the token had
// been meant for that origin.
func TestUnauthorizedOffOrigin(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"who are you"}`, http.StatusUnauthorized)
	}))
	t.Cleanup(elsewhere.Close)
	e.addPluginAt("acme_redir", redirectTo(t, http.StatusFound, elsewhere.URL).URL+"/login", "read")
	e.connect(7, "alice")
	out := e.call("acme_redir", 7)
	if code, _ := errorOf(out); code != "http_error" || out["http_status"] != float64(http.StatusUnauthorized) {
		t.Fatalf("got %v", out)
	}
	if n := e.as.Refreshes.Load(); n != 0 {
		t.Fatalf("%d refreshes for a 401 from an origin that got no token", n)
	}
}
