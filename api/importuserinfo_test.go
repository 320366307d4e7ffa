package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestImportURLSecretNeverShown: an OpenAPI import from a URL with
// userinfo (leftovers76) or with a credential in its query (?access_token=,
// ?sig=, …: leftovers78) or in a path segment's parameters
// (;jsessionid=: leftovers80) stores and shows its location without it (the
// credential's value written "…", a parameter that is no credential kept),
// in the sources' list, the fetch's errors, the audit and the logs, and
// keeps the URL sealed, so that a sync from the location as shown fetches
// with it; a row written before with the URL whole takes its location
// without it at its next sync, and is listed without it until then.
// Before: the secret whole in every one of them.
func TestImportURLSecretNeverShown(t *testing.T) {
	const pw, token, sig, session = "tok-Zq9sK7wXr2", "qtok-Hx81bVr0", "sig-Wq3nZ0e5", "sess-Jm80Qp4c"
	for _, c := range []struct {
		name    string
		secrets []string
		allowed func(r *http.Request) bool
		at      func(base string) (full, shown string) // the document's URL
	}{
		{"userinfo", []string{pw},
			func(r *http.Request) bool { u, p, ok := r.BasicAuth(); return ok && u == "user" && p == pw },
			func(base string) (string, string) {
				host := strings.TrimPrefix(base, "http://")
				return "http://user:" + pw + "@" + host + "/spec.json", "http://…@" + host + "/spec.json"
			}},
		{"query", []string{token, sig},
			func(r *http.Request) bool {
				q := r.URL.Query()
				return q.Get("access_token") == token && q.Get("Sig") == sig && q.Get("group") == "admin"
			},
			func(base string) (string, string) {
				return base + "/spec.json?group=admin&access_token=" + token + "&Sig=" + sig, base + "/spec.json?group=admin&access_token=…&Sig=…"
			}},
		{"path parameter", []string{session}, // leftovers80
			func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, ";v=2;jsessionid="+session) },
			func(base string) (string, string) {
				return base + "/spec.json;v=2;jsessionid=" + session, base + "/spec.json;v=2;jsessionid=…"
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, st *store.Store) {
				leaks := func(s string) bool {
					return slices.ContainsFunc(c.secrets, func(secret string) bool { return strings.Contains(s, secret) })
				}
				var version, authed atomic.Int32
				up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if !c.allowed(r) {
						http.Error(w, "who are you", http.StatusUnauthorized)
						return
					}
					authed.Add(1)
					if path, _, _ := strings.Cut(r.URL.Path, ";"); path != "/spec.json" {
						http.NotFound(w, r)
						return
					}
					fmt.Fprintf(w, `{"openapi":"3.0.3","info":{"title":"Vault","version":"%d"},"servers":[{"url":"/api"}],"paths":{"/items%d":{"get":{"operationId":"items%d","responses":{"200":{"description":"ok"}}}}}}`,
						version.Load(), version.Load(), version.Load())
				}))
				defer up.Close()
				full, shown := c.at(up.URL)
				checkImportURLNeverShown(t, newEnv(t, st), full, shown, &version, &authed, leaks)
			})
		})
	}
}

// checkImportURLNeverShown is TestImportURLSecretNeverShown's walk of one
// protected document's URL, full, shown as shown; leaks tells a secret.
func checkImportURLNeverShown(t *testing.T, e *env, full, shown string, version, authed *atomic.Int32, leaks func(string) bool) {
	code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": full})
	if code != http.StatusOK || count(res["added"]) != 1 {
		t.Fatalf("import: %d %v", code, res)
	}
	code, res = e.do("GET", "/v1/sources", adminToken, nil)
	if code != http.StatusOK || leaks(fmt.Sprint(res)) || !strings.Contains(fmt.Sprint(res), shown) {
		t.Errorf("GET /v1/sources shows the secret or not the location %s: %v", shown, res)
	}
	var stored string
	if err := e.st.DB().QueryRow("SELECT CONCAT(location, ' ', COALESCE(options, ''), ' ', COALESCE(sealed_url, '')) FROM sys_ai_import_source").Scan(&stored); err != nil &&
		e.st.DB().QueryRow("SELECT location || ' ' || COALESCE(options, '') || ' ' || COALESCE(sealed_url, '') FROM sys_ai_import_source").Scan(&stored) != nil {
		t.Fatal(err)
	}
	if leaks(stored) || !strings.Contains(stored, "v1:") {
		t.Errorf("the row holds the secret in clear, or no sealed URL: %s", stored)
	}
	if code, body := e.do("GET", "/v1/plugins/items0", adminToken, nil); code != http.StatusOK || leaks(fmt.Sprint(body)) {
		t.Errorf("the plugin of a relative server: %d %v", code, body)
	}
	code, res = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": strings.Replace(full, "spec.json", "missing.json", 1)})
	if code != http.StatusBadGateway || errCode(res) != "fetch_failed" || leaks(errMessage(res)) {
		t.Errorf("a failed fetch: %d %v", code, res)
	}

	// a sync from the location as shown fetches with the URL kept
	version.Store(1)
	before := authed.Load()
	code, res = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": shown})
	if code != http.StatusOK || count(res["added"]) != 1 || count(res["removed"]) != 1 || authed.Load() != before+1 {
		t.Errorf("a sync from the location shown: %d %v", code, res)
	}
	// the same shown location under another source's name has no URL kept
	code, res = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": shown, "source": "other"})
	if code != http.StatusBadRequest || !strings.Contains(errMessage(res), "url:") || leaks(errMessage(res)) {
		t.Errorf("a shown URL without a URL kept: %d %v", code, res)
	}

	// a row written before the rule (00031, 00034), the URL whole
	if _, err := e.st.DB().Exec("UPDATE sys_ai_import_source SET location = ?, sealed_url = NULL", full); err != nil {
		t.Fatal(err)
	}
	code, res = e.do("GET", "/v1/sources", adminToken, nil)
	if code != http.StatusOK || leaks(fmt.Sprint(res)) {
		t.Errorf("a row written before is listed with its secret: %v", res)
	}
	version.Store(2)
	code, res = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": full})
	if code != http.StatusOK || count(res["added"]) != 1 || count(res["removed"]) != 1 {
		t.Errorf("the sync of a row written before took another source: %d %v", code, res)
	}
	var n int
	if err := e.st.DB().QueryRow("SELECT COUNT(*) FROM sys_ai_import_source WHERE location = ?", shown).Scan(&n); err != nil || n != 1 {
		t.Errorf("the row written before, after its sync: %d at %s (%v)", n, shown, err)
	}
	rows, err := e.st.DB().Query("SELECT target, detail FROM sys_ai_admin_log")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var target, detail string
		if err := rows.Scan(&target, &detail); err != nil {
			t.Fatal(err)
		}
		if leaks(target + detail) {
			t.Errorf("the audit holds the secret: %s %s", target, detail)
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if leaks(e.logs.String()) {
		t.Errorf("the logs hold the secret: %s", e.logs.String())
	}
}

// TestImportURLAtInPath (leftovers77): a URL whose path holds an @ after
// its userinfo (an npm-style scope) is shown with its userinfo alone cut,
// so a sync from the location as shown fetches the document. Before: shown
// "http://…@scope/spec.json", no longer the URL, and that sync refused.
func TestImportURLAtInPath(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		const secret = "tok-Pa7hAt9x"
		var version atomic.Int32
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != secret || r.URL.Path != "/@scope/spec.json" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"openapi":"3.0.3","info":{"title":"Scoped","version":"1"},"servers":[{"url":"http://127.0.0.1:1"}],"paths":{"/v%d":{"get":{"operationId":"scoped%d","responses":{"200":{"description":"ok"}}}}}}`,
				version.Load(), version.Load())
		}))
		defer up.Close()
		host := strings.TrimPrefix(up.URL, "http://")
		full := "http://user:" + secret + "@" + host + "/@scope/spec.json"
		shown := "http://…@" + host + "/@scope/spec.json"

		e := newEnv(t, st)
		if code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": full}); code != http.StatusOK || count(res["added"]) != 1 {
			t.Fatalf("import: %d %v", code, res)
		}
		if code, res := e.do("GET", "/v1/sources", adminToken, nil); code != http.StatusOK || strings.Contains(fmt.Sprint(res), secret) || !strings.Contains(fmt.Sprint(res), shown) {
			t.Errorf("GET /v1/sources: want %s, without the password: %v", shown, res)
		}
		version.Store(1)
		if code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": shown}); code != http.StatusOK || count(res["added"]) != 1 || count(res["removed"]) != 1 {
			t.Errorf("a sync from the location shown: %d %v", code, res)
		}
		// a row stored as leftovers76 cut it: its next sync from the URL
		// whole finds it and moves it to the location shown now
		if _, err := e.st.DB().Exec("UPDATE sys_ai_import_source SET location = ?", "…@scope/spec.json"); err != nil {
			t.Fatal(err)
		}
		version.Store(2)
		if code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": full}); code != http.StatusOK || count(res["added"]) != 1 || count(res["removed"]) != 1 {
			t.Errorf("the sync of a row cut at its last @: %d %v, want the same source", code, res)
		}
		var n int
		if err := e.st.DB().QueryRow("SELECT COUNT(*) FROM sys_ai_import_source WHERE location = ?", shown).Scan(&n); err != nil || n != 1 {
			t.Errorf("the row cut at its last @, after its sync: %d at %s (%v)", n, shown, err)
		}
	})
}
