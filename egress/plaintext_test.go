package egress_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
)

// tls81: a request carrying credentials (egress.WithCredentials) to an
// http:// URL is refused before anything is dialled, unless the host is
// loopback or listed; one without credentials, or over https, is not.
func TestPlaintextCredentialsRefused(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	tests := []struct {
		name, host, listed string
		marked, refused    bool
	}{
		{"named host, credentials", "api.test", "", true, true},
		{"named host, no credentials", "api.test", "", false, false},
		{"loopback IP", "127.0.0.1", "", true, false},
		{"localhost", "localhost", "", true, false},
		{"listed host", "intranet.test", "intranet.test", true, false},
		{"listed in upper case, trailing dot", "intranet.test", "INTRANET.test.", true, false},
		{"listed origin", "intranet.test", "http://intranet.test:" + port, true, false},
		{"origin of another port", "intranet.test", "http://intranet.test:1", true, true},
		{"another host listed", "api.test", "intranet.test", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, dialled := egresstest.NamedClient(t, tt.listed, "api.test", "intranet.test", "secure.test")
			before := hits
			ctx := t.Context()
			if tt.marked {
				ctx = egress.WithCredentials(ctx, nil)
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+tt.host+":"+port+"/x?key=secret-key-0123", nil)
			resp, err := c.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			pe, ok := errors.AsType[*egress.PlaintextError](err)
			if ok != tt.refused {
				t.Fatalf("err = %v, refused %v; want refused %v", err, ok, tt.refused)
			}
			if !tt.refused {
				if hits != before+1 {
					t.Fatal("not sent")
				}
				return
			}
			if d := dialled(); len(d) > 0 || hits != before {
				t.Fatalf("dialled %v (%d hits) before refusing", d, hits-before)
			}
			// net/http's *url.Error quotes the URL whole; callers show the
			// error it wraps (engine.innermost, openapi.FetchCause).
			if msg := pe.Error(); strings.Contains(msg, "secret-key") || !strings.Contains(msg, "http://"+strings.ToLower(tt.host)+":"+port) ||
				!strings.Contains(msg, "https://") || !strings.Contains(msg, egress.EnvPlaintextCredentialHosts) {
				t.Errorf("message %q: want the origin, what is expected and the setting, no query", msg)
			}
		})
	}
}

// tls81: an https API redirecting a call that carries credentials to
// http:// is not followed: the hop is refused before it is dialled
// (CheckRedirect drops the marked headers, but the answer would come
// back unauthenticated and open to tampering). Before, it was followed.
func TestPlaintextRedirectRefused(t *testing.T) {
	var plainHits int
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { plainHits++ }))
	defer plain.Close()
	plainURL, _ := url.Parse(plain.URL)
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://api.test:"+plainURL.Port()+"/landing", http.StatusFound)
	}))
	defer secure.Close()
	secureURL, _ := url.Parse(secure.URL)
	for _, tt := range []struct {
		name    string
		marked  bool
		refused bool
	}{{"credentials", true, true}, {"none", false, false}} {
		t.Run(tt.name, func(t *testing.T) {
			c, dialled := egresstest.NamedClient(t, "", "api.test", "intranet.test", "secure.test")
			egress.TransportOf(c.Transport).TLSClientConfig = &tls.Config{RootCAs: secure.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, ServerName: "example.com"}
			ctx := t.Context()
			if tt.marked {
				ctx = egress.WithCredentials(ctx, nil)
			}
			before := plainHits
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://secure.test:"+secureURL.Port()+"/start", nil)
			req.Header.Set("Authorization", "Bearer secret-token-0123")
			resp, err := c.Do(req)
			if resp != nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			_, refused := errors.AsType[*egress.PlaintextError](err)
			if refused != tt.refused {
				t.Fatalf("err = %v; want refused %v", err, tt.refused)
			}
			if tt.refused && (plainHits != before || len(dialled()) != 1) {
				t.Fatalf("the http hop was dialled (%v) or reached (%d)", dialled(), plainHits-before)
			}
			if !tt.refused && plainHits != before+1 {
				t.Fatalf("redirect not followed: %v", err)
			}
		})
	}
}

// Bad input names the setting and what is expected.
func TestParsePlaintextHosts(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"", true},
		{"ruoyi.corp, 10.0.0.5,[fd00::1],http://intranet.test:8080,http://10.0.0.6", true},
		{"https://intranet.test", false}, // https needs no listing
		{"http://intranet.test/path", false},
		{"http://user:pw@intranet.test", false},
		{"intranet.test:8080", false},
		{"*.corp", false},
		{"bad host", false},
	} {
		_, err := egress.ParsePlaintextHosts(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("%q: err = %v, want ok %v", tt.in, err, tt.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), egress.EnvPlaintextCredentialHosts) || !strings.Contains(err.Error(), "http origin")) {
			t.Errorf("%q: %v: want the setting and what is expected", tt.in, err)
		}
	}
}
