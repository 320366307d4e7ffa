package console_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
)

func TestProbe73(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	st := testdb.At(t, through)
	e := newEnv(t, st, newMasterKey())
	tok, _, err := api.IssueToken(context.Background(), st, 7, "p", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	spec := `{"spec":{"openapi":"3.0.0","info":{"title":"t","version":"1"},"servers":[{"url":"https://a.example"}],"paths":{"/x":{"get":{"operationId":"x","responses":{"200":{"description":"ok"}}}}}}}`
	routes := []struct{ m, p, tok, body string }{
		{"GET", "/v1/pending", tok, ""},
		{"POST", "/v1/pending/abc", tok, `{"decision":"approve"}`},
		{"POST", "/v1/runs/abc/resume", tok, `{}`},
		{"GET", "/v1/executions", tok, ""},
		{"GET", "/v1/runs", tok, ""},
		{"GET", "/v1/tokens", adminToken, ""},
		{"POST", "/v1/tokens", adminToken, `{"user_id":"7","name":"x"}`},
		{"DELETE", "/v1/tokens/99999", adminToken, ""},
		{"GET", "/v1/sources", adminToken, ""},
		{"POST", "/v1/plugins/import/openapi", adminToken, spec},
		{"GET", "/v1/plugins", adminToken, ""},
		{"GET", "/v1/connections", tok, ""},
		{"GET", "/v1/mcp/servers", adminToken, ""},
	}
	do := func(m, p, tk, body string, timeout time.Duration) string {
		req, _ := http.NewRequest(m, e.url+p, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tk)
		c := &http.Client{Timeout: timeout}
		began := time.Now()
		resp, err := c.Do(req)
		code := 0
		if err == nil {
			code = resp.StatusCode
			resp.Body.Close()
		}
		return m + " " + p + ": " + http.StatusText(code) + " " + time.Since(began).Round(time.Millisecond).String()
	}
	for _, r := range routes {
		t.Log("live " + do(r.m, r.p, r.tok, r.body, 10*time.Second))
	}
	proxy.Blackhole()
	var wg sync.WaitGroup
	for _, r := range routes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Log("holed " + do(r.m, r.p, r.tok, r.body, 20*time.Second))
		}()
	}
	wg.Wait()
}
