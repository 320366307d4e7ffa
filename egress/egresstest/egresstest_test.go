package egresstest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// The guard refuses non-loopback addresses before its inner dial runs,
// even when the policy allows everything: tests cannot reach the network
// whatever the code under test does.
func TestLoopbackOnlyIndependentOfPolicy(t *testing.T) {
	var inner []string
	d := Dialer("0.0.0.0/0,::/0") // the policy opens everything
	d.Resolver = StubResolver{"public.test": {netip.MustParseAddr("203.0.113.5")}}
	d.Dial = LoopbackOnly(func(_ context.Context, _, addr string) (net.Conn, error) {
		inner = append(inner, addr)
		return nil, errors.New("inner dial")
	})
	for _, addr := range []string{"public.test:80", "203.0.113.5:443", "[2001:db8::1]:443", "10.0.0.1:80"} {
		_, err := d.DialContext(t.Context(), "tcp", addr)
		if err == nil || !strings.Contains(err.Error(), "egresstest: refusing to dial non-loopback") {
			t.Errorf("%s: err = %v", addr, err)
		}
	}
	// Called directly with a name (no egress.Dialer in front), it refuses
	// too: it never resolves.
	if _, err := LoopbackOnly(d.Dial)(t.Context(), "tcp", "localhost:80"); err == nil {
		t.Error("name: err = nil")
	}
	if len(inner) != 0 {
		t.Errorf("inner dial reached for %q", inner)
	}
	for _, addr := range []string{"127.0.0.1:1", "[::1]:1", "[::ffff:127.0.0.1]:1"} {
		if _, err := d.DialContext(t.Context(), "tcp", addr); err == nil || err.Error() != "inner dial" {
			t.Errorf("%s: err = %v, want the inner dial's", addr, err)
		}
	}
}

func TestStubResolver(t *testing.T) {
	r := StubResolver{"dual.test": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}}
	tests := []struct {
		network, host, want string
	}{
		{"ip", "dual.test", "127.0.0.1 ::1"},
		{"ip4", "dual.test", "127.0.0.1"},
		{"ip6", "dual.test", "::1"},
		{"ip", "localhost", "127.0.0.1"},
		{"ip", "example.com", ""}, // no real DNS
		{"ip6", "localhost", ""},
	}
	for _, tt := range tests {
		got, err := r.LookupNetIP(t.Context(), tt.network, tt.host)
		var s []string
		for _, a := range got {
			s = append(s, a.String())
		}
		if strings.Join(s, " ") != tt.want {
			t.Errorf("LookupNetIP(%s, %s) = %v, %v; want %q", tt.network, tt.host, got, err, tt.want)
		}
		var dnsErr *net.DNSError
		if tt.want == "" && (!errors.As(err, &dnsErr) || !dnsErr.IsNotFound) {
			t.Errorf("LookupNetIP(%s, %s): err = %v, want not found", tt.network, tt.host, err)
		}
	}
}

func TestClientReachesLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	c := Client(t)
	for _, url := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Errorf("%s: %q", url, b)
		}
	}
}
