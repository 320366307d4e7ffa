package auth_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
)

// TestEchoMasking: an endpoint echoing the key it was sent, in any form,
// in a body read whole or in an event stream, is read with the key
// masked; what it says besides stays; past the cap a read fails.
func TestEchoMasking(t *testing.T) {
	const key = "sk-embed-0123456789abcdef"
	for _, tc := range []struct {
		name, ct, body, header string
		max                    int64
		want, wantErr          string
	}{
		{"bearer, JSON error", "application/json", `{"error":{"message":"bad key %s"}}`, "Authorization", 1 << 20, `{"error":{"message":"bad key [REDACTED]"}}`, ""},
		{"api-key, plain", "text/plain", "denied: %s", "Api-Key", 1 << 20, "denied: [REDACTED]", ""},
		{"event stream", "text/event-stream", "data: {\"k\":\"%s\"}\n\ndata: [DONE]\n\n", "Authorization", 1 << 20, "data: {\"k\":\"[REDACTED]\"}\n\ndata: [DONE]\n\n", ""},
		{"base64", "application/json", "{\"b\":\"%s\"}", "Authorization", 1 << 20, `{"b":"[REDACTED]"}`, ""},
		{"over the cap", "text/plain", "%s and more", "Authorization", 12, "", "larger than the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got := strings.TrimPrefix(r.Header.Get(tc.header), "Bearer ")
				if tc.name == "base64" {
					got = base64.StdEncoding.EncodeToString([]byte(got))
				}
				w.Header().Set("Content-Type", tc.ct)
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, tc.body, got)
			}))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			if tc.header == "Authorization" {
				req.Header.Set("Authorization", "Bearer "+key)
			} else {
				req.Header.Set(tc.header, key)
			}
			resp, err := (&http.Client{Transport: auth.EchoMasking(nil, tc.max)}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(string(b), key[:12]) {
					t.Errorf("read %q, %v; want %q", b, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(b) != tc.want {
				t.Errorf("read %q, %v; want %q", b, err, tc.want)
			}
		})
	}
}
