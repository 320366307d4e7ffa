package egress_test

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

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
)

// errNotDialed is what recordDial answers: it stands for any upstream
// that is not loopback, so those addresses are checked but never dialed.
var errNotDialed = errors.New("test: recorded, not dialed")

// recordDial records the addresses it is asked to dial and dials none.
func recordDial(got *[]string) egress.DialFunc {
	return func(_ context.Context, network, addr string) (net.Conn, error) {
		*got = append(*got, network+" "+addr)
		return nil, errNotDialed
	}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestDialerChecksResolvedAddresses(t *testing.T) {
	resolver := egresstest.StubResolver{
		"public.test":    addrs("8.8.8.8"),
		"public6.test":   addrs("2606:4700::1111"),
		"rebind.test":    addrs("127.0.0.1"),
		"metadata.test":  addrs("169.254.169.254"),
		"mapped.test":    addrs("::ffff:127.0.0.1"),
		"mixed.test":     addrs("10.0.0.1", "8.8.4.4", "::1"),
		"allinside.test": addrs("10.0.0.1", "fd00::1"),
	}
	tests := []struct {
		addr   string
		dialed []string // what reached the underlying dial
		denied bool
	}{
		{"public.test:443", []string{"tcp 8.8.8.8:443"}, false}, // the IP, not the name
		{"public6.test:80", []string{"tcp [2606:4700::1111]:80"}, false},
		{"8.8.8.8:80", []string{"tcp 8.8.8.8:80"}, false},
		{"mixed.test:80", []string{"tcp 8.8.4.4:80"}, false}, // only the allowed candidate
		{"rebind.test:80", nil, true},
		{"metadata.test:80", nil, true},
		{"mapped.test:80", nil, true},
		{"allinside.test:80", nil, true},
		{"127.0.0.1:80", nil, true},
		{"[::1]:80", nil, true},
		{"[::ffff:127.0.0.1]:80", nil, true},
		{"169.254.169.254:80", nil, true},
		{"[fe80::1%25eth0]:80", nil, true},
		{"0.0.0.0:80", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			var got []string
			d := &egress.Dialer{Resolver: resolver, Dial: recordDial(&got)}
			_, err := d.DialContext(t.Context(), "tcp", tt.addr)
			var de *egress.DeniedError
			if tt.denied != errors.As(err, &de) {
				t.Fatalf("err = %v, want denied=%v", err, tt.denied)
			}
			if !tt.denied && !errors.Is(err, errNotDialed) {
				t.Fatalf("err = %v, want the dial's error", err)
			}
			if strings.Join(got, ",") != strings.Join(tt.dialed, ",") {
				t.Errorf("dialed %q, want %q", got, tt.dialed)
			}
		})
	}
}

func TestDialerRefusesOtherNetworksAndUnknownNames(t *testing.T) {
	var got []string
	d := &egress.Dialer{Resolver: egresstest.StubResolver{}, Dial: recordDial(&got)}
	for _, network := range []string{"udp", "unix", "ip"} {
		if _, err := d.DialContext(t.Context(), network, "8.8.8.8:53"); err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("network %s: err = %v", network, err)
		}
	}
	if _, err := d.DialContext(t.Context(), "tcp", "nowhere.test:80"); err == nil {
		t.Error("unknown name: err = nil")
	}
	if len(got) != 0 {
		t.Errorf("dialed %q", got)
	}
}

func newServer(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func port(s *httptest.Server) string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// A name resolving to loopback is refused at dial under the default
// policy, and opened by an allowlist entry for its CIDR or its name.
func TestClientDeniesLoopbackByDefault(t *testing.T) {
	srv := newServer(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	url := "http://rebind.test:" + port(srv) + "/"
	for _, tt := range []struct {
		allow string
		ok    bool
	}{
		{"", false},
		{"10.0.0.0/8,other.test", false},
		{"127.0.0.0/8", true},
		{"127.0.0.1", true},
		{"REBIND.test", true},
		{"*.test", true},
	} {
		d := egresstest.Dialer(tt.allow)
		d.Resolver = egresstest.StubResolver{"rebind.test": addrs("127.0.0.1")}
		c := egress.NewClient(d)
		body, err := get(t, c, url)
		c.CloseIdleConnections()
		if tt.ok {
			if err != nil || body != "reached" {
				t.Errorf("allow %q: %q, %v; want reached", tt.allow, body, err)
			}
			continue
		}
		var de *egress.DeniedError
		if !errors.As(err, &de) || de.Host != "rebind.test" || de.IP != netip.MustParseAddr("127.0.0.1") {
			t.Errorf("allow %q: err = %v, want *DeniedError for rebind.test/127.0.0.1", tt.allow, err)
		}
	}
}

// The policy is checked again on every redirect hop: an allowed server
// cannot bounce the call to a denied address.
func TestRedirectToDeniedAddressRefused(t *testing.T) {
	inner := newServer(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "inner") }))
	outer := newServer(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	resolver := egresstest.StubResolver{"inner.test": addrs("127.0.0.2")}
	for _, tt := range []struct {
		allow, to string
		ok        bool
	}{
		{"127.0.0.1/32", "http://127.0.0.2:" + port(inner) + "/", false},
		{"127.0.0.1/32", "http://inner.test:" + port(inner) + "/", false},
		{"127.0.0.1/32", "http://169.254.169.254/latest/meta-data/", false},
		{"127.0.0.1/32,inner.test", "http://inner.test:" + port(inner) + "/", true},
		{"127.0.0.1/32,127.0.0.2", "http://127.0.0.2:" + port(inner) + "/", true},
	} {
		d := egresstest.Dialer(tt.allow)
		d.Resolver = resolver
		c := egress.NewClient(d)
		body, err := get(t, c, outer.URL+"/?to="+tt.to)
		c.CloseIdleConnections()
		if tt.ok {
			if err != nil || body != "inner" {
				t.Errorf("allow %q to %s: %q, %v; want inner", tt.allow, tt.to, body, err)
			}
			continue
		}
		var de *egress.DeniedError
		if !errors.As(err, &de) {
			t.Errorf("allow %q to %s: err = %v, want *DeniedError", tt.allow, tt.to, err)
		}
	}
}

func TestNewTransport(t *testing.T) {
	tr := egress.TransportOf(egress.NewTransport(&egress.Dialer{}))
	if tr.Proxy != nil {
		t.Error("Proxy set: an environment proxy would dial past the policy")
	}
	if !tr.DisableCompression || !tr.ForceAttemptHTTP2 || tr.MaxIdleConns != 256 || tr.MaxIdleConnsPerHost != 64 {
		t.Errorf("transport not tuned: %+v", tr)
	}
	c := egress.NewClient(&egress.Dialer{})
	if c.Timeout != 0 || c.CheckRedirect == nil {
		t.Errorf("client: Timeout %v, CheckRedirect set %v", c.Timeout, c.CheckRedirect != nil)
	}
}
