package api_test

import (
	"net/http"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMetricsToken (leftovers76): BLINDEXEC_METRICS_TOKEN reads /metrics
// and no other route; the administrator's token still reads it, another
// token does not.
func TestMetricsToken(t *testing.T) {
	const metrics = "metrics-token-0123456789abcdef"
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), func(s *api.Server) { s.MetricsToken = metrics })
	scrape := func(token string) int {
		req, _ := http.NewRequest("GET", e.url+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for token, want := range map[string]int{metrics: 200, adminToken: 200, metrics + "x": 401, serviceToken: 403} {
		if got := scrape(token); got != want {
			t.Errorf("/metrics with %.10s…: %d, want %d", token, got, want)
		}
	}
	for _, route := range [][2]string{{"GET", "/v1/plugins"}, {"GET", "/v1/tools"}, {"GET", "/v1/sources"},
		{"POST", "/v1/credentials/rotate"}, {"POST", "/v1/execute"}} {
		if code, _ := e.do(route[0], route[1], metrics, nil); code != http.StatusUnauthorized {
			t.Errorf("%s %s with the metrics token: %d, want 401", route[0], route[1], code)
		}
	}
}
