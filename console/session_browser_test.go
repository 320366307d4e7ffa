package console_test

import (
	"testing"

	"github.com/blindexec/blindexec/console"
	"github.com/blindexec/blindexec/internal/testdb"
)

// TestSecureSessionInBrowser: with BLINDEXEC_BROWSER_URL https, the
// session cookie is a Secure __Host- cookie (TestSessionCookieSecure);
// a real browser takes it, and one at a loopback address signs in over
// plain HTTP all the same (browsers hold loopback for a secure context).
func TestSecureSessionInBrowser(t *testing.T) {
	needBrowser(t)
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey(), func(c *console.Console) { c.BrowserURL = "https://ai.example.com" })
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.waitPage("catalog")
	if c := eval[string](tb, `document.cookie`); c != "" {
		t.Errorf("the page reads cookies: %q", c)
	}
}
