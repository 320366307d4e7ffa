package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// SyncBuffer is a log sink tests read while the server writes to it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bearer is a transport sending a bearer token (an MCP client's, in the
// tests of both packages).
type Bearer string

func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// DoJSON sends body to base+path (a string as is, anything else as JSON),
// with the bearer token when given and header as name, value pairs, and
// decodes the JSON answer.
func DoJSON(t testing.TB, base, method, path, token string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	code, _, out := DoJSONHeader(t, base, method, path, token, body, header...)
	return code, out
}

// DoJSONHeader is DoJSON that also returns the answer's header.
func DoJSONHeader(t testing.TB, base, method, path, token string, body any, header ...string) (int, http.Header, map[string]any) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &out) != nil {
		t.Fatalf("%s %s: %d, body is not JSON: %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, resp.Header, out
}
