package api_test

import (
	"io"
	"net/http"
	"strings"
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

// TestEveryAnswerNotStored (review 75): review 74b set no-store in
// writeJSON, so the answers written otherwise went without it: a call's
// result on /v1/execute (the upstream's output, written as the engine
// shaped it), the audit log as NDJSON, a run's event stream ("no-cache",
// which a cache may store). Now every answer of the API is no-store.
func TestEveryAnswerNotStored(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"Status":"200","Result":[]}`)
	})
	e := newEnv(t, testdb.Open(t, "sqlite"))
	if code, body := e.do("POST", "/v1/plugins", adminToken, seedPlugin(t, up.URL)); code != http.StatusCreated {
		t.Fatalf("add plugin: %d %v", code, body)
	}
	for _, c := range []struct{ method, path, accept, body string }{
		{"POST", "/v1/execute", "", `{"name": "search_company_basic", "arguments": {"keyword": "x"}, "user_id": "7",
			"credentials": {"QCC_KEY": "k-0123456789abcdef", "QCC_SECRET": "s-0123456789abcdef"}}`},
		{"GET", "/v1/audit", "application/x-ndjson", ""},
	} {
		req, err := http.NewRequest(c.method, e.url+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: HTTP %d", c.method, c.path, res.StatusCode)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s %s (%s): Cache-Control %q, want no-store", c.method, c.path, res.Header.Get("Content-Type"), got)
		}
	}
}
