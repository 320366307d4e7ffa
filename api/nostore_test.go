package api_test

import (
	"net/http"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestAnswersNotStored: an API answer holds what a person's browser must
// not keep on disk after signing out of the console — the requests
// waiting for approval, execution records, the tokens' list — so every
// JSON answer, an error included, is Cache-Control: no-store (review 74b:
// the console's reads of /v1 were stored by the browser's cache).
func TestAnswersNotStored(t *testing.T) {
	e := newEnv(t, testdb.Open(t, "sqlite"))
	for _, c := range []struct{ method, path, token string }{
		{"GET", "/v1/audit", adminToken},
		{"GET", "/v1/executions", adminToken},
		{"GET", "/v1/tokens", adminToken},
		{"GET", "/v1/credentials/7", adminToken},
		{"GET", "/v1/executions", "bx_not_a_token"},
		{"GET", "/v1/no-such-route", adminToken},
	} {
		req, err := http.NewRequest(c.method, e.url+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s %s (HTTP %d): Cache-Control %q, want no-store", c.method, c.path, res.StatusCode, got)
		}
	}
}
