package connections_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// tls81: a provider's token or revocation URL at http:// on a host that
// is neither loopback nor listed gets neither the code and client secret
// nor a token to revoke: refused before any dial. idp.test resolves to
// loopback, so what was refused would have been reached.
func TestProviderPlaintextRefused(t *testing.T) {
	for _, field := range []string{"token_url", "revocation_url"} {
		t.Run(field, func(t *testing.T) {
			e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
			var hits atomic.Int64
			plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
			}))
			t.Cleanup(plain.Close)
			u, _ := url.Parse(plain.URL)
			e.useProvider(field, "http://idp.test:"+u.Port()+"/"+field)
			if n := hits.Load(); n != 0 {
				t.Fatalf("%d request(s) sent to the http %s", n, field)
			}
			if logs := e.logs.String(); field == "revocation_url" && !strings.Contains(logs, "credentials are not sent in plain text") {
				t.Errorf("the refused revocation is not logged:\n%s", logs)
			}
		})
	}
}
