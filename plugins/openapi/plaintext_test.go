package openapi

import (
	"context"
	"errors"
	"fmt"
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

// TestPlaintextWarnedOncePerScheme (trace82): an http:// URL the
// credentials would go to is warned of once per document and scheme,
// naming the scheme, on the first operation using it; tls81 repeated the
// sentence on every operation (a document of 400 operations behind one
// such tokenUrl said it 400 times).
func TestPlaintextWarnedOncePerScheme(t *testing.T) {
	const doc = `{"openapi":"3.0.0","info":{"title":"t","version":"1"},
	  "servers":[{"url":"%s"}],
	  "security":[{"%s":[]}],
	  "components":{"securitySchemes":{
	    "cc":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"http://idp.example/token","scopes":{}}}},
	    "key":{"type":"apiKey","in":"header","name":"X-Key"}}},
	  "paths":{"/a":{"get":{"responses":{"200":{"description":"ok"}}},"post":{"responses":{"200":{"description":"ok"}}}},
	           "/b":{"get":{"security":[{"key":[]}],"responses":{"200":{"description":"ok"}}}}}}`
	for _, tt := range []struct {
		name, server, scheme string
		want                 []string // each operation's warnings, in order
	}{
		{"tokenUrl", "https://api.example", "cc", []string{
			`security scheme "cc": tokenUrl http://idp.example/token is http://`, "", ""}},
		{"server URL", "http://api.example/v1", "key", []string{
			`security scheme "key": the server URL http://api.example is http://`, "", ""}},
		{"loopback", "http://127.0.0.1:8080", "key", []string{"", "", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ops, failures, err := convertDoc(t, fmt.Appendf(nil, doc, tt.server, tt.scheme), Options{})
			if err != nil || len(failures) > 0 || len(ops) != len(tt.want) {
				t.Fatalf("%d operations, %v, %v", len(ops), failures, err)
			}
			for i, op := range ops {
				got := strings.Join(op.Warnings, "\n")
				if tt.want[i] == "" && got != "" || tt.want[i] != "" && (len(op.Warnings) != 1 || !strings.HasPrefix(got, tt.want[i])) {
					t.Errorf("%s: %q, want one starting %q", op.Key, got, tt.want[i])
				}
			}
		})
	}
}
