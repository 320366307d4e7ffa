package connections_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/connections/oauthtest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestRevocationURLNeverLogged (leftovers80): a provider row whose
// revocation_url holds user info (written by SQL: the API refuses it) was
// quoted whole by a failed revocation's log line (`revoke at
// http://user:pw@…`), and Go's url.Error quoted its user again. The URL is
// shown as the other refused provider URLs are, redact.URL's.
func TestRevocationURLNeverLogged(t *testing.T) {
	const user, pw = "usr-Rv80Lq", "pw-Rv80Zx"
	for _, c := range []struct{ name, path string }{
		{"answered 404", "/no-such-revoke"},
		{"not answered", ""}, // port 1: refused
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
			p := map[string]any{"name": "acme", "authorization_url": e.as.URL + "/authorize", "token_url": e.as.URL + "/token",
				"revocation_url": e.as.URL + "/revoke", "scopes": []string{"openid", "read"}, "client_id": oauthtest.ClientID,
				"client_secret": oauthtest.ClientSecret}
			if code, body := e.do("POST", "/v1/oauth/providers", adminToken, p); code != http.StatusOK {
				t.Fatalf("register provider: %d %v", code, body)
			}
			b := e.browser("account-1")
			code, page, _ := b.get(e.authorize(7, ""))
			if code != http.StatusOK {
				t.Fatalf("confirmation page: %d\n%s", code, page)
			}
			if code, page := b.confirm(page, "connect"); code != http.StatusOK {
				t.Fatalf("confirm: %d\n%s", code, page)
			}
			revocation := "http://" + user + ":" + pw + "@" + strings.TrimPrefix(e.as.URL, "http://") + c.path
			if c.path == "" {
				revocation = "http://" + user + ":" + pw + "@127.0.0.1:1/revoke"
			}
			if _, err := e.st.DB().Exec("UPDATE sys_ai_oauth_provider SET revocation_url = ?", revocation); err != nil {
				t.Fatal(err)
			}
			if code, out := e.do("DELETE", "/v1/connections/acme?user_id=7", serviceToken, nil); code != http.StatusNoContent {
				t.Fatalf("disconnect: %d %v", code, out)
			}
			logs := e.logs.String()
			if !strings.Contains(logs, "revoke at http://…@") || strings.Contains(logs, pw) || strings.Contains(logs, user) {
				t.Errorf("the failed revocation's log, want the URL without its user info:\n%s", logs)
			}
		})
	}
}
