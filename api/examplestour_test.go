package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestEveryRouteDescribed (issue 45 point 1): every route the API
// registers has its operation in the description, every method of the
// MCP endpoints among them, and the description has no operation the API
// does not register; the console's own routes are left out (its pages
// and its session's internal routes: docs/api.md says so).
func TestEveryRouteDescribed(t *testing.T) {
	doc := describedPaths(t)
	described := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			if !strings.Contains("parameters summary description servers", method) {
				described[strings.ToUpper(method)+" "+path] = false
			}
		}
	}
	constants := strings.NewReplacer(`"GET " + connections.StartPath`, "GET "+connections.StartPath,
		`"GET " + connections.CallbackPath`, "GET "+connections.CallbackPath, `"POST " + connections.ConfirmPath`, "POST "+connections.ConfirmPath)
	for _, r := range registeredRoutes(t) {
		r = constants.Replace(r)
		if r == "/" || strings.Contains(r, "/console") || strings.Contains(r, "reportPath") {
			continue // the catch-all 404; the console's
		}
		method, path, ok := strings.Cut(r, " ")
		methods := []string{method}
		if !ok { // every method: the MCP endpoints
			path, methods = r, []string{"POST", "GET", "DELETE"}
		}
		path = strings.TrimSuffix(path, "{$}")
		if strings.HasSuffix(path, "/") { // a subtree: its one described operation
			path += "{handle}"
		}
		for _, m := range methods {
			if _, ok := described[m+" "+path]; !ok {
				t.Errorf("%s %s: registered, not in the description (api/openapi.yaml)", m, path)
				continue
			}
			described[m+" "+path] = true
		}
	}
	for op, seen := range described {
		if !seen {
			t.Errorf("%s: in the description, registered by no source", op)
		}
	}
}

// TestAdministratorsTour walks the administrator's routes no other
// test of the package answers with success — tokens, stored keys and
// their rotation, OAuth providers, a user's connection — so that the
// description's examples of them come from a real exchange
// (testdata/examples.json), and checks each answer.
func TestAdministratorsTour(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newConnectEnv(t, st)
		want := func(status int, method, path string, body any) map[string]any {
			t.Helper()
			code, answer := e.do(method, path, adminToken, body)
			if code != status {
				t.Fatalf("%s %s: %d %v, want %d", method, path, code, answer, status)
			}
			return answer
		}
		want(http.StatusCreated, "POST", "/v1/tokens", map[string]any{"user_id": 7, "name": "ruoyi-7"})
		if tokens, _ := want(http.StatusOK, "GET", "/v1/tokens", nil)["tokens"].([]any); len(tokens) != 1 {
			t.Errorf("tokens: %v, want the one made", tokens)
		}
		want(http.StatusNoContent, "PUT", "/v1/credentials/7/API_KEY", map[string]any{"value": "key-of-user-7"})
		if keys, _ := want(http.StatusOK, "GET", "/v1/credentials/7", nil)["credentials"].([]any); len(keys) != 1 {
			t.Errorf("credentials: %v, want API_KEY", keys)
		}
		// One key in the keyring: nothing is under an older one.
		if n := want(http.StatusOK, "POST", "/v1/credentials/rotate", nil)["rotated"]; n != float64(0) {
			t.Errorf("rotated %v, want 0", n)
		}
		if ps, _ := want(http.StatusOK, "GET", "/v1/oauth/providers", nil)["providers"].([]any); len(ps) != 1 {
			t.Errorf("providers: %v, want acme", ps)
		}
		if p := want(http.StatusOK, "GET", "/v1/oauth/providers/acme", nil); p["name"] != "acme" {
			t.Errorf("provider: %v", p)
		}
		link := want(http.StatusOK, "POST", "/v1/connections/acme/authorize", map[string]any{"user_id": 7})
		url, _ := link["url"].(string)
		e.as.Browser(t, "account-1").Connect(url)
		if cs, _ := want(http.StatusOK, "GET", "/v1/connections?user_id=7", nil)["connections"].([]any); len(cs) != 1 {
			t.Errorf("connections: %v, want acme's", cs)
		}
	})
}

// describedPaths reads the description's operations, by path and method.
func describedPaths(t *testing.T) (doc struct {
	Paths map[string]map[string]json.RawMessage `json:"paths"`
}) {
	t.Helper()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}
