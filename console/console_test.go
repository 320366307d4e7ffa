package console_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/console"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// do sends a request with c's cookies (and the CSRF token when given).
func do(t *testing.T, c *http.Client, method, u, csrf, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if csrf != "" {
		req.Header.Set(console.CSRFHeader, csrf)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func sessionOf(t *testing.T, e *env, c *http.Client) (role, csrf string) {
	t.Helper()
	code, s := do(t, c, "GET", e.url+"/console/api/session", "", "")
	if code != 200 {
		t.Fatalf("session: %d %v", code, s)
	}
	return s["role"].(string), s["csrf"].(string)
}

// TestSignInSession: the sign-in form turns a token into an HttpOnly,
// SameSite=Strict cookie that the JSON API accepts in place of the bearer
// token; changes need the CSRF token; a forged or foreign cookie, another
// origin's form and a wrong token are refused; sign-out ends it.
func TestSignInSession(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, newMasterKey())
		c := e.client()

		resp := e.signIn(c, "wrong-token")
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/console/?error=token_invalid" {
			t.Fatalf("wrong token: %d -> %q", resp.StatusCode, loc)
		}
		// A form posted from another origin is refused (login CSRF).
		req, _ := http.NewRequest("POST", e.url+"/console/login", strings.NewReader("token="+adminToken))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://evil.example")
		if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-origin sign-in: %v %v", r, err)
		}

		resp = e.signIn(c, adminToken)
		ck := resp.Cookies()
		if len(ck) != 1 || ck[0].Name != console.CookieName || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
			t.Fatalf("sign-in cookie = %+v", ck)
		}
		if strings.Contains(ck[0].Value, adminToken) {
			t.Fatal("the cookie carries the token")
		}
		role, csrf := sessionOf(t, e, c)
		if role != "admin" {
			t.Fatalf("role %q", role)
		}
		if code, body := do(t, c, "GET", e.url+"/v1/plugins", "", ""); code != 200 {
			t.Fatalf("GET /v1/plugins with the session: %d %v", code, body)
		}
		const put = `{"value":"a-long-credential-value"}`
		if code, _ := do(t, c, "PUT", e.url+"/v1/credentials/7/API_KEY", "", put); code != http.StatusUnauthorized {
			t.Fatalf("PUT without the CSRF token: %d, want 401", code)
		}
		if code, _ := do(t, c, "PUT", e.url+"/v1/credentials/7/API_KEY", "forged", put); code != http.StatusUnauthorized {
			t.Fatalf("PUT with a forged CSRF token: %d, want 401", code)
		}
		if code, body := do(t, c, "PUT", e.url+"/v1/credentials/7/API_KEY", csrf, put); code/100 != 2 {
			t.Fatalf("PUT with the CSRF token: %d %v", code, body)
		}

		// Another replica (same master key) accepts the cookie; an engine
		// with another master key does not; nor does a tampered cookie.
		other := newEnv(t, st, e.master)
		cross := func(base string, value string) int {
			req, _ := http.NewRequest("GET", base+"/v1/plugins", nil)
			req.AddCookie(&http.Cookie{Name: console.CookieName, Value: value})
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			return r.StatusCode
		}
		if code := cross(other.url, ck[0].Value); code != 200 {
			t.Fatalf("another replica: %d", code)
		}
		if code := cross(newEnv(t, st, newMasterKey()).url, ck[0].Value); code != http.StatusUnauthorized {
			t.Fatalf("another master key: %d", code)
		}
		tampered := strings.Replace(ck[0].Value, "v1.", "v1.0", 1)
		if code := cross(e.url, tampered); code != http.StatusUnauthorized {
			t.Fatalf("tampered cookie: %d", code)
		}

		stolen := c.Jar.Cookies(req.URL)[0].Value
		req, _ = http.NewRequest("POST", e.url+"/console/logout", nil)
		req.Header.Set("Origin", e.url)
		if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-out: %v %v", r, err)
		}
		if code, _ := do(t, c, "GET", e.url+"/v1/plugins", "", ""); code != http.StatusUnauthorized {
			t.Fatalf("after sign-out: %d", code)
		}
		// A copy of the cookie kept from before ends too, here and on a
		// replica that reads the signed-out sessions.
		if code := cross(e.url, stolen); code != http.StatusUnauthorized {
			t.Fatalf("a copy of the signed-out cookie: %d", code)
		}
		if code := cross(newEnv(t, st, e.master).url, stolen); code != http.StatusUnauthorized {
			t.Fatalf("a copy of the signed-out cookie on another replica: %d", code)
		}
	})
}

// TestSessionEndsWithItsToken: a per-user session ends when its token is
// revoked, sees only its own user's data, and the revocation, like every
// administrative change, is in the administrators' log.
func TestSessionEndsWithItsToken(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, newMasterKey())
		admin := e.client()
		e.signIn(admin, adminToken)
		_, csrf := sessionOf(t, e, admin)
		code, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "console"}`)
		if code != 201 && code != 200 {
			t.Fatalf("create token: %d %v", code, tok)
		}
		user := e.client()
		e.signIn(user, tok["token"].(string))
		role, ucsrf := sessionOf(t, e, user)
		if role != "user" {
			t.Fatalf("role %q", role)
		}
		for path, want := range map[string]int{"/v1/credentials/7": 200, "/v1/credentials/8": 403, "/v1/plugins": 403, "/v1/tools": 200, "/v1/audit": 403} {
			if code, body := do(t, user, "GET", e.url+path, "", ""); code != want {
				t.Errorf("user session GET %s: %d %v, want %d", path, code, body, want)
			}
		}
		if code, _ := do(t, user, "PUT", e.url+"/v1/credentials/8/K", ucsrf, `{"value":"another-users-value"}`); code != 403 {
			t.Errorf("user session PUT another user's credential: %d, want 403", code)
		}

		id := strconv.FormatFloat(tok["token_id"].(float64), 'f', 0, 64)
		if code, body := do(t, admin, "DELETE", e.url+"/v1/tokens/"+id, csrf, ""); code/100 != 2 {
			t.Fatalf("revoke: %d %v", code, body)
		}
		if code, _ := do(t, user, "GET", e.url+"/v1/credentials/7", "", ""); code != http.StatusUnauthorized {
			t.Fatalf("session of a revoked token: %d, want 401", code)
		}

		code, log := do(t, admin, "GET", e.url+"/v1/audit", "", "")
		if code != 200 {
			t.Fatalf("audit: %d", code)
		}
		var got []string
		signIns := 0
		for _, ev := range log["events"].([]any) {
			m := ev.(map[string]any)
			if m["kind"] == "session" {
				signIns++
				continue
			}
			got = append(got, m["actor"].(string)+" "+m["via"].(string)+" "+m["kind"].(string)+" "+m["target"].(string)+": "+m["summary"].(string))
		}
		if signIns != 2 {
			t.Errorf("%d sign-ins in the log, want 2", signIns)
		}
		want := []string{"admin console token /v1/tokens/" + id + ": token #" + id + " revoked",
			"admin console token /v1/tokens: token #" + id + " created for user 7 “console”"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

var inlineHandler = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)

// TestPagesCarryThePolicy: every console page and asset is served with the
// CSP, and the page itself holds no inline script.
func TestPagesCarryThePolicy(t *testing.T) {
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	for _, p := range []string{"/console/", "/console/assets/app.js", "/console/assets/app.css"} {
		resp, err := http.Get(e.url + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "report-uri /console/csp-report") {
			t.Errorf("%s: %d, CSP %q", p, resp.StatusCode, csp)
		}
		if p == "/console/" && (strings.Contains(string(body), "<script>") || inlineHandler.Match(body)) {
			t.Errorf("the page holds inline script or handlers")
		}
	}
}

// TestConsoleAnswersMasked (issue 29): the console's "Try it" of a
// per-user session calls /v1/execute with the session: a stored key that a
// catalog plugin reads as a secret is masked in the answer even through a
// plugin reading it as an identifier, and an inline plugin loosening the
// row is refused (credential_not_bound), nothing sent.
func TestConsoleAnswersMasked(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		const value = "stored-key-0123456789abcdef"
		var hits atomic.Int32
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			fmt.Fprintf(w, `{"echo":%q}`, value)
		}))
		t.Cleanup(up.Close)
		e := newEnv(t, st, newMasterKey())
		admin := e.client()
		e.signIn(admin, adminToken)
		_, csrf := sessionOf(t, e, admin)
		doc := func(name, mapping string) string {
			return fmt.Sprintf(`{"name": %q, "description": "d", "parameters": {"type": "object", "properties": {}},
				"execution": {"method": "GET", "base_url": %q}, "auth_config": {"type": "api_key", "mapping": [%s]}}`, name, up.URL+"/"+name, mapping)
		}
		tenant := doc("as_tenant", `{"source": "SECRET_KEY", "target": "X-Tenant", "secret": false}`)
		for _, d := range []string{doc("keyed", `{"source": "SECRET_KEY", "target": "X-Key"}`), tenant} {
			if code, body := do(t, admin, "POST", e.url+"/v1/plugins", csrf, d); code != http.StatusCreated {
				t.Fatalf("add plugin: %d %v", code, body)
			}
		}
		if code, body := do(t, admin, "PUT", e.url+"/v1/credentials/7/SECRET_KEY", csrf, `{"value": "`+value+`"}`); code != http.StatusNoContent {
			t.Fatalf("store: %d %v", code, body)
		}
		code, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "console"}`)
		if code != http.StatusCreated {
			t.Fatalf("create token: %d %v", code, tok)
		}
		user := e.client()
		e.signIn(user, tok["token"].(string))
		_, ucsrf := sessionOf(t, e, user)

		code, body := do(t, user, "POST", e.url+"/v1/execute", ucsrf, `{"name": "as_tenant", "arguments": {}}`)
		out, _ := json.Marshal(body)
		if code != http.StatusOK || body["ok"] != true || strings.Contains(string(out), value) || !strings.Contains(string(out), "[REDACTED]") {
			t.Fatalf("Try it: %d %s", code, out)
		}
		inline := strings.Replace(strings.Replace(doc("keyed", `{"source": "SECRET_KEY", "target": "X-Key", "secret": false}`), "\n", " ", -1), "\t", " ", -1)
		code, body = do(t, user, "POST", e.url+"/v1/execute", ucsrf, `{"plugin": `+inline+`, "arguments": {}}`)
		if e, _ := body["error"].(map[string]any); code != http.StatusUnprocessableEntity || e["code"] != "credential_not_bound" {
			t.Fatalf("inline plugin loosening the row: %d %v", code, body)
		}
		if n := hits.Load(); n != 1 {
			t.Fatalf("the upstream got %d requests, want the one call", n)
		}
	})
}

// TestSessionCookieSecure: the engine serves no TLS itself, so behind the
// reverse proxy that terminates it r.TLS is never set; the session cookie
// (and its removal at sign-out) is Secure when the browser's address is
// https (BLINDEXEC_BROWSER_URL) or a trusted proxy says the request came
// over https, so that it is never sent over plain HTTP, and is then a
// __Host- cookie, which no page of a sibling subdomain can set in its
// place. Before, it never was Secure: a network attacker who got the
// browser to request any http:// URL of the engine's host from one of its
// pages read it; and a sibling subdomain's page could sign the browser in
// to a session of its choosing.
func TestSessionCookieSecure(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	for _, tc := range []struct {
		name, browserURL, proxies, proto string
		secure                           bool
	}{
		{"plain http, no browser URL", "", "", "", false},
		{"browser URL https", "https://ai.example.com", "", "", true},
		{"browser URL https under a path", "HTTPS://ai.example.com/engine", "", "", true},
		{"browser URL http", "http://ai.example.com", "", "", false},
		{"trusted proxy says https", "", "127.0.0.1", "https", true},
		{"trusted proxies, the client's hop https", "", "127.0.0.1", "https, http", true},
		{"trusted proxy says http", "", "127.0.0.1", "http", false},
		{"untrusted client says https", "", "", "https", false},
		{"untrusted client says https, other proxies trusted", "", "10.0.0.0/8", "https", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxies, err := console.ParseProxies(tc.proxies)
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, st, newMasterKey(), func(c *console.Console) { c.BrowserURL, c.TrustedProxies = tc.browserURL, proxies })
			c := e.client()
			post := func(path, body string) *http.Cookie {
				req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Origin", e.url)
				if tc.proto != "" {
					req.Header.Set("X-Forwarded-Proto", tc.proto)
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				for _, ck := range resp.Cookies() {
					if ck.Name == console.CookieName || ck.Name == console.SecureCookieName {
						return ck
					}
				}
				t.Fatalf("%s set no session cookie (%d)", path, resp.StatusCode)
				return nil
			}
			name := console.CookieName
			if tc.secure {
				name = console.SecureCookieName
			}
			ck := post("/console/login", "token="+adminToken)
			if ck.Name != name || ck.Secure != tc.secure || !ck.HttpOnly || ck.Path != "/" || ck.Domain != "" || ck.Value == "" {
				t.Errorf("sign-in cookie %s Secure=%v HttpOnly=%v Path=%q Domain=%q, want %s Secure=%v", ck.Name, ck.Secure, ck.HttpOnly, ck.Path, ck.Domain, name, tc.secure)
			}
			// A valid session's value under the other name — a cookie a
			// page of a sibling subdomain sets for the parent domain
			// (cookie tossing) — signs nobody in over HTTPS.
			session := func(cookie string) int {
				req, _ := http.NewRequest("GET", e.url+"/console/api/session", nil)
				req.Header.Set("Cookie", cookie+"="+ck.Value)
				if tc.proto != "" {
					req.Header.Set("X-Forwarded-Proto", tc.proto)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if code := session(name); code != http.StatusOK {
				t.Errorf("the session cookie %s: %d", name, code)
			}
			if code := session(console.CookieName); tc.secure && code != http.StatusUnauthorized {
				t.Errorf("over HTTPS, a tossed %s cookie holding a session: %d, want 401", console.CookieName, code)
			}
			if out := post("/console/logout", ""); out.Name != name || out.Secure != tc.secure || out.MaxAge >= 0 {
				t.Errorf("sign-out cookie %s Secure=%v MaxAge=%d, want %s Secure=%v", out.Name, out.Secure, out.MaxAge, name, tc.secure)
			}
		})
	}
}
