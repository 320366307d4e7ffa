package connections_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestConnectionRoutesPerUser: a per-user token acts on its own user's
// connection only; the service and the administrator name the user.
func TestConnectionRoutesPerUser(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider()
	e.addPlugin("acme_me", "read")
	e.connect(2, "bob")
	code, out := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 1, "name": "a"})
	if code != http.StatusCreated {
		t.Fatalf("token: %d %v", code, out)
	}
	alice := out["token"].(string)
	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		want                      int
	}{
		{"a user authorizes for another", "POST", "/v1/connections/acme/authorize", alice, map[string]any{"user_id": 2}, http.StatusForbidden},
		{"a user lists another's", "GET", "/v1/connections?user_id=2", alice, nil, http.StatusForbidden},
		{"a user disconnects another's", "DELETE", "/v1/connections/acme?user_id=2", alice, nil, http.StatusForbidden},
		{"a user executes as another", "POST", "/v1/execute", alice, map[string]any{"name": "acme_me", "arguments": map[string]any{}, "user_id": 2}, http.StatusForbidden},
		{"a user names itself on the confirmation page", "POST", "/v1/connections/acme/authorize", alice, map[string]any{"display_name": "Bob"}, http.StatusForbidden},
		{"the service authorizes for nobody", "POST", "/v1/connections/acme/authorize", serviceToken, map[string]any{}, http.StatusBadRequest},
		{"the service disconnects nobody's", "DELETE", "/v1/connections/acme", serviceToken, nil, http.StatusBadRequest},
		{"a user authorizes for itself", "POST", "/v1/connections/acme/authorize", alice, map[string]any{}, http.StatusOK},
		{"a user lists its own", "GET", "/v1/connections", alice, nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, out := e.do(tc.method, tc.path, tc.token, tc.body); code != tc.want {
				t.Fatalf("%d, want %d: %v", code, tc.want, out)
			}
		})
	}
	// Bob's connection is untouched, and Alice's list shows nothing of it.
	if cs, err := e.st.ListOAuthConnections(t.Context(), 2); err != nil || len(cs) != 1 {
		t.Fatalf("bob's connections: %v %v", cs, err)
	}
	if _, out := e.do("GET", "/v1/connections", alice, nil); len(out["connections"].([]any)) != 0 {
		t.Fatalf("alice sees: %v", out)
	}
	// Every entry point refuses a user without a connection, or no user,
	// with connection_required, and sends nothing.
	hits := e.apiHits.Load()
	for _, tc := range []struct {
		name, path, token string
		body              any
	}{
		{"execute, user without a connection", "/v1/execute", serviceToken, map[string]any{"name": "acme_me", "arguments": map[string]any{}, "user_id": 1}},
		{"execute, no user", "/v1/execute", serviceToken, map[string]any{"name": "acme_me", "arguments": map[string]any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, out := e.do("POST", tc.path, tc.token, tc.body)
			if code, details := errorOf(out); code != "connection_required" || details["provider"] != "acme" {
				t.Fatalf("got %v", out)
			}
		})
	}
	if n := e.apiHits.Load(); n != hits {
		t.Fatalf("the API got %d requests from refused calls", n-hits)
	}
}

// TestOpenFlowsBounded: a user asking for start URLs at will gets
// connections.MaxOpenFlows of them within the flow's life, then 429;
// other users are not affected, and expired flows no longer count.
func TestOpenFlowsBounded(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider()
	ask := func(user int64) (int, map[string]any) {
		return e.do("POST", "/v1/connections/acme/authorize", serviceToken, map[string]any{"user_id": user})
	}
	for i := range connections.MaxOpenFlows {
		if code, out := ask(7); code != http.StatusOK {
			t.Fatalf("start URL %d: %d %v", i+1, code, out)
		}
	}
	if code, out := ask(7); code != http.StatusTooManyRequests || out["error"].(map[string]any)["code"] != "too_many_flows" {
		t.Fatalf("past the bound: %d %v", code, out)
	}
	if code, out := ask(8); code != http.StatusOK {
		t.Fatalf("another user: %d %v", code, out)
	}
	if _, err := e.st.DB().Exec("UPDATE sys_ai_oauth_flow SET expires_at = ? WHERE user_id = 7", time.Now().Add(-time.Second).UTC()); err != nil {
		t.Fatal(err)
	}
	if code, out := ask(7); code != http.StatusOK {
		t.Fatalf("once the flows expired: %d %v", code, out)
	}
}
