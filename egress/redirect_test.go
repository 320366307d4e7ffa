package egress_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
)

var credHeaders = map[string]string{
	"Token":               "tok-123",
	"Authorization":       "Bearer abc",
	"Cookie":              "sid=xyz",
	"Proxy-Authorization": "Basic cHJveHk=",
}

func newRequest(ctx context.Context, url string) *http.Request {
	req, err := http.NewRequestWithContext(egress.WithSensitiveHeaders(ctx, []string{"Token"}), http.MethodGet, url, nil)
	if err != nil {
		panic(err)
	}
	for k, v := range credHeaders {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Plain", "kept")
	req.Header.Set("Referer", "http://a.example/?key=secret")
	return req
}

// CheckRedirect alone, on synthetic chains: which hops keep credentials.
func TestCheckRedirectOrigins(t *testing.T) {
	tests := []struct {
		name  string
		chain []string // first request ... new request
		keep  bool
	}{
		{"same origin", []string{"https://api.example/a", "https://api.example/b"}, true},
		{"default port made explicit", []string{"http://api.example/a", "http://API.example:80/b"}, true},
		{"https default port made explicit", []string{"https://api.example/a", "https://api.example:443/b"}, true},
		{"https on port 80", []string{"https://api.example/a", "https://api.example:80/b"}, false},
		{"other host", []string{"https://api.example/a", "https://evil.example/b"}, false},
		{"subdomain", []string{"https://example.com/a", "https://api.example.com/b"}, false},
		{"other port", []string{"http://127.0.0.1:8080/a", "http://127.0.0.1:8081/b"}, false},
		{"https to http downgrade", []string{"https://api.example/a", "http://api.example/b"}, false},
		{"http to https", []string{"http://api.example/a", "https://api.example/b"}, false},
		{"back to the origin after leaving it", []string{"https://api.example/a", "https://evil.example/b", "https://api.example/c"}, false},
		// review78: lower-cased, "apİ" was "api", but the client dials
		// xn--api-bec.example (IDNA maps İ to i and a combining dot).
		{"a dotted capital I: another host", []string{"https://api.example/a", "https://apİ.example/b"}, false},
		{"a Unicode name: the host its punycode names", []string{"https://bücher.example/a", "https://xn--bcher-kva.example/b"}, true},
		{"a name IDNA refuses", []string{"https://api.example/a", "https://a\u200d.example/b"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var via []*http.Request
			for _, u := range tt.chain {
				via = append(via, newRequest(t.Context(), u))
			}
			req := via[len(via)-1]
			via = via[:len(via)-1]
			if err := egress.CheckRedirect(req, via); err != nil {
				t.Fatal(err)
			}
			for k, v := range credHeaders {
				if got := req.Header.Get(k); (got == v) != tt.keep {
					t.Errorf("%s = %q, keep=%v", k, got, tt.keep)
				}
			}
			if req.Header.Get("X-Plain") != "kept" {
				t.Error("X-Plain removed")
			}
			if req.Header.Get("Referer") != "" {
				t.Error("Referer kept: it can carry query-string credentials")
			}
		})
	}
}

// Review 69: a hop re-sending a body (what net/http does on 307 and 308)
// stays on the origin; a 301-303 hop sends none and goes on.
func TestCheckRedirectBody(t *testing.T) {
	tests := []struct {
		name string
		next string
		body bool
		want error
	}{
		{"same origin with a body", "https://api.example/b", true, nil},
		{"another origin with a body", "https://evil.example/b", true, egress.ErrBodyToAnotherOrigin},
		{"downgrade with a body", "http://api.example/b", true, egress.ErrBodyToAnotherOrigin},
		{"another origin without a body", "https://evil.example/b", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newRequest(t.Context(), tt.next)
			if tt.body {
				req.Body = io.NopCloser(strings.NewReader("client_secret=s"))
			}
			req.Response = &http.Response{StatusCode: http.StatusTemporaryRedirect}
			err := egress.CheckRedirect(req, []*http.Request{newRequest(t.Context(), "https://api.example/a")})
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			// The administrator reads the call's error: it names the
			// redirect and where it led (the origin only: a path or
			// query may hold what the upstream put there), and what to do.
			if err != nil {
				u, _ := url.Parse(tt.next)
				for _, want := range []string{"307", egress.OriginOf(u), "new address"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%q does not name %q", err, want)
					}
				}
				if strings.Contains(err.Error(), "/b") {
					t.Errorf("%q names the redirect's path", err)
				}
			}
		})
	}
}

func TestCheckRedirectLimit(t *testing.T) {
	var via []*http.Request
	for range 10 {
		via = append(via, newRequest(t.Context(), "http://a.example/"))
	}
	if err := egress.CheckRedirect(newRequest(t.Context(), "http://a.example/"), via[:9]); err != nil {
		t.Errorf("hop 10: %v", err)
	}
	if err := egress.CheckRedirect(newRequest(t.Context(), "http://a.example/"), via); !errors.Is(err, egress.ErrTooManyRedirects) {
		t.Errorf("hop 11: %v", err)
	}
}

// headerRecorder records the headers of the last request it served.
type headerRecorder struct {
	mu sync.Mutex
	h  http.Header
}

func (r *headerRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.h = req.Header.Clone()
	r.mu.Unlock()
}

func (r *headerRecorder) get() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h
}

// Real servers: credentials reach a same-origin redirect target and not
// one on another host, through the client every engine call uses.
func TestRedirectDropsCredentialsAcrossHosts(t *testing.T) {
	var final headerRecorder
	other := httptest.NewServer(&final) // 127.0.0.1, another port
	defer other.Close()
	mux := http.NewServeMux()
	mux.Handle("/final", &final)
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/final", http.StatusFound) })
	mux.HandleFunc("/localhost", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/final", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/port", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/final", http.StatusFound)
	})
	origin := httptest.NewServer(mux)
	defer origin.Close()
	c := egresstest.Client(t)

	for _, tt := range []struct {
		path string
		keep bool
	}{
		{"/same", true},
		{"/localhost", false},
		{"/port", false},
	} {
		req := newRequest(t.Context(), origin.URL+tt.path)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		resp.Body.Close()
		h := final.get()
		for k, v := range credHeaders {
			if got := h.Get(k); (got == v) != tt.keep {
				t.Errorf("%s: target got %s = %q, keep=%v", tt.path, k, got, tt.keep)
			}
		}
		if h.Get("X-Plain") != "kept" {
			t.Errorf("%s: X-Plain lost", tt.path)
		}
	}
}

// bodyRoundTripper answers the first requests with the hops' redirects,
// whatever their URL, then 200, and keeps what each request carried; no
// request leaves the process.
type bodyRoundTripper struct {
	hops []hop
	seen []seenRequest
}

type hop struct {
	status   int
	location string
}

type seenRequest struct {
	origin, method, auth string
	body                 []byte
}

func (rt *bodyRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	s := seenRequest{origin: egress.OriginOf(req.URL), method: req.Method, auth: req.Header.Get("Authorization")}
	if req.Body != nil {
		s.body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	rt.seen = append(rt.seen, s)
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}
	if i := len(rt.seen) - 1; i < len(rt.hops) {
		resp.StatusCode = rt.hops[i].status
		resp.Header.Set("Location", rt.hops[i].location)
	}
	return resp, nil
}

// FuzzCheckRedirect: whatever redirects an upstream answers (status,
// Location, up to three hops) to whatever method, net/http's client with
// CheckRedirect never sends the request's body, nor its Authorization, to
// another origin than the first request's.
func FuzzCheckRedirect(f *testing.F) {
	f.Add("POST", []byte(`{"a":1}`), uint16(307), "https://evil.example/b", uint16(0), "", uint16(0), "")
	f.Add("PUT", []byte("x"), uint16(308), "//evil.example/b", uint16(0), "", uint16(0), "")
	f.Add("POST", []byte("x"), uint16(302), "https://evil.example/b", uint16(307), "https://evil.example/c", uint16(0), "")
	f.Add("POST", []byte("x"), uint16(307), "/same", uint16(308), "HTTPS://API.EXAMPLE:443/again", uint16(307), "http://api.example/down")
	f.Add("DELETE", []byte("x"), uint16(301), "https://evil.example/", uint16(0), "", uint16(0), "")
	f.Add("GET", []byte{}, uint16(307), "https://evil.example/", uint16(0), "", uint16(0), "")
	f.Add("PATCH", []byte("x"), uint16(308), "https://api.example:8443/", uint16(0), "", uint16(0), "")
	f.Fuzz(func(t *testing.T, method string, body []byte, s1 uint16, l1 string, s2 uint16, l2 string, s3 uint16, l3 string) {
		rt := &bodyRoundTripper{}
		for _, h := range []hop{{int(s1), l1}, {int(s2), l2}, {int(s3), l3}} {
			if h.status < 300 || h.status > 399 {
				break
			}
			rt.hops = append(rt.hops, h)
		}
		req, err := http.NewRequest(method, "https://api.example/a", bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer abc")
		c := &http.Client{Transport: rt, CheckRedirect: egress.CheckRedirect}
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
		}
		first := rt.seen[0].origin
		for i, s := range rt.seen[1:] {
			if s.origin == first {
				continue
			}
			if len(body) > 0 && len(s.body) > 0 {
				t.Fatalf("hop %d: %s %s carried the body %q to another origin than %s", i+1, s.method, s.origin, s.body, first)
			}
			if s.auth != "" {
				t.Fatalf("hop %d: %s %s carried Authorization to another origin than %s", i+1, s.method, s.origin, first)
			}
		}
	})
}
