package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestImportURLSchemeInCapitals (review78): an import URL's scheme is
// any case (Go's client fetches HTTPS://user:token@host/ with its
// userinfo as basic auth, and leftovers77 redacts it so), but the import
// route took only a lower-case http:// or https:// for a URL: it refused
// HTTPS://user:token@host/spec.json quoting it whole, the token in the
// answer. Now it is a URL, fetched, stored and shown as one.
func TestImportURLSchemeInCapitals(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		const secret = "tok-Caps9Zx7Lq"
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != secret {
				http.Error(w, "who are you", http.StatusUnauthorized)
				return
			}
			fmt.Fprint(w, `{"openapi":"3.0.3","info":{"title":"Caps","version":"1"},"servers":[{"url":"http://127.0.0.1:1"}],"paths":{"/items":{"get":{"operationId":"capsItems","responses":{"200":{"description":"ok"}}}}}}`)
		}))
		defer up.Close()
		host := strings.TrimPrefix(up.URL, "http://")
		e := newEnv(t, st)
		code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": "HTTP://user:" + secret + "@" + host + "/spec.json"})
		if strings.Contains(fmt.Sprint(res), secret) {
			t.Fatalf("the answer holds the password: %d %v", code, res)
		}
		if code != http.StatusOK || count(res["added"]) != 1 {
			t.Fatalf("import: %d %v", code, res)
		}
		if code, res := e.do("GET", "/v1/sources", adminToken, nil); code != http.StatusOK || strings.Contains(fmt.Sprint(res), secret) || !strings.Contains(fmt.Sprint(res), "HTTP://…@"+host) {
			t.Errorf("GET /v1/sources: %v", res)
		}
		if strings.Contains(e.logs.String(), secret) {
			t.Errorf("the logs hold the password: %s", e.logs.String())
		}
	})
}
