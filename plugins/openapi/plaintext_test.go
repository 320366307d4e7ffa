package openapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
)

// tls81: a document URL holding a credential (userinfo or a query key,
// a sealed URL's secret once importer.FetchURL opened it) is not fetched
// over http:// from a host that is neither loopback nor listed: refused
// before any dial, the error naming the origin only. Without a credential,
// or at loopback, it is fetched as before. spec.test resolves to loopback.
func TestFetchCredentialURLNotInPlaintext(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		io.WriteString(w, `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{}}`)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	d := egresstest.Dialer("127.0.0.0/8")
	d.Resolver = egresstest.StubResolver{"spec.test": {netip.MustParseAddr("127.0.0.1")}}
	client := egress.NewClient(d)
	defer client.CloseIdleConnections()
	for _, tt := range []struct {
		url     string
		refused bool
	}{
		{"http://spec.test:" + port + "/openapi.json?access_token=secret-0123456789", true},
		{"http://user:secret-0123456789@spec.test:" + port + "/openapi.json", true},
		{"http://spec.test:" + port + "/openapi.json", false},
		{"http://127.0.0.1:" + port + "/openapi.json?access_token=secret-0123456789", false},
	} {
		before := hits
		_, err := Fetch(context.Background(), client, tt.url)
		var pe *egress.PlaintextError
		if errors.As(err, &pe) != tt.refused || !tt.refused && err != nil {
			t.Errorf("%s: err = %v, want refused %v", tt.url, err, tt.refused)
			continue
		}
		if tt.refused && (hits != before || strings.Contains(err.Error(), "secret-0123456789")) {
			t.Errorf("%s: reached (%d) or the error shows the secret: %v", tt.url, hits-before, err)
		}
	}
}
