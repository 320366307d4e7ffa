package engine

import (
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress"
)

// TestUpstreamRefusalsAsDocumented: docs/plugins.md tells the
// administrator what a call's error says when the upstream redirects a
// body to another origin, answers in a compression the engine did not
// ask for or sends enormous headers; each excerpt it quotes is what the
// call's error says, and the redirect's names where it led.
func TestUpstreamRefusalsAsDocumented(t *testing.T) {
	page, err := os.ReadFile("../docs/plugins.md")
	if err != nil {
		t.Fatal(err)
	}
	other := newUpstream(t, nil)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, other.URL+"/landing?k=v", http.StatusTemporaryRedirect)
		case "/br":
			w.Header().Set("Content-Encoding", "br")
			w.Write([]byte{0x0b, 0x01, 0x80, 0x00})
		case "/headers":
			for range 20 {
				w.Header().Add("X-Pad", strings.Repeat("a", 64<<10))
			}
			w.WriteHeader(http.StatusOK)
		}
	})
	u, _ := url.Parse(other.URL)
	tests := []struct {
		path, documented string
		names            []string // what the error names besides
	}{
		{"/moved", "a redirect to another origin would send the request body there; not followed (a 307 redirect to", []string{egress.OriginOf(u)}},
		{"/br", `its content coding "br" is not one the engine asked for (gzip, deflate)`, nil},
		{"/headers", "server response headers exceeded 1048576 bytes; aborted", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if !strings.Contains(string(page), tt.documented) {
				t.Fatalf("docs/plugins.md does not quote %q", tt.documented)
			}
			p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
			  "execution":{"method":"POST","base_url":"%s`+tt.path+`"}}`, up.URL)
			res, _ := newHarness(t).call(t, p, `{"q":"x"}`, nil)
			if res.OK || res.Error.Code != CodeTransportError || !strings.Contains(res.Error.Message, tt.documented) {
				t.Fatalf("%.400s", resultJSON(t, res))
			}
			for _, n := range tt.names {
				if !strings.Contains(res.Error.Message, n) {
					t.Errorf("%q does not name %q", res.Error.Message, n)
				}
			}
			if strings.Contains(res.Error.Message, "landing") {
				t.Errorf("%q names the redirect's path", res.Error.Message)
			}
		})
	}
}
