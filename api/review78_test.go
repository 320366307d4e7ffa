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

// TestImportBaseURLUserinfoNeverStored (review78): leftovers76 stored an
// import's options with the document URL's userinfo cut, but not the
// base_url option's: an import given base_url
// http://user:password@host/api (every operation refused, as a plugin's
// base_url carries no credentials) kept the password in the source's
// options, listed by GET /v1/sources and the console.
func TestImportBaseURLUserinfoNeverStored(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		const secret = "pw-Base7Xq2Lm"
		e := newEnv(t, st)
		doc := `{"openapi":"3.0.3","info":{"title":"B","version":"1"},"paths":{"/items":{"get":{"operationId":"bItems","responses":{"200":{"description":"ok"}}}}}}`
		code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"document": doc, "base_url": "http://user:" + secret + "@127.0.0.1:1/api"})
		if strings.Contains(fmt.Sprint(res), secret) {
			t.Errorf("the answer holds the password: %d %v", code, res)
		}
		code, res = e.do("GET", "/v1/sources", adminToken, nil)
		if code != http.StatusOK || strings.Contains(fmt.Sprint(res), secret) {
			t.Errorf("GET /v1/sources holds the password: %v", res)
		}
		var options string
		if err := e.st.DB().QueryRow("SELECT COALESCE(options, '') FROM sys_ai_import_source").Scan(&options); err != nil || strings.Contains(options, secret) {
			t.Errorf("the source's options hold the password: %s (%v)", options, err)
		}
	})
}
