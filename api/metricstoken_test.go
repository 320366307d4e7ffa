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
	for _, tt := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/metrics", metrics, http.StatusOK},
		{"GET", "/metrics", adminToken, http.StatusOK},
		{"GET", "/metrics", metrics + "x", http.StatusUnauthorized},
		{"GET", "/metrics", serviceToken, http.StatusForbidden},
		{"GET", "/v1/plugins", metrics, http.StatusUnauthorized},
		{"GET", "/v1/tools", metrics, http.StatusUnauthorized},
		{"GET", "/v1/sources", metrics, http.StatusUnauthorized},
		{"POST", "/v1/credentials/rotate", metrics, http.StatusUnauthorized},
		{"POST", "/v1/execute", metrics, http.StatusUnauthorized},
	} {
		req, err := http.NewRequest(tt.method, e.url+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tt.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s with %.10s…: %d, want %d", tt.method, tt.path, tt.token, resp.StatusCode, tt.want)
		}
	}
}
