// Package egresstest gives tests an egress-guarded HTTP client that can
// only ever reach loopback: names come from a stub resolver (no real DNS)
// and the dial refuses any non-loopback address before a packet leaves,
// even if the policy or the code under test were wrong.
package egresstest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/blindexec/blindexec/egress"
)

// LoopbackOnly wraps next (nil: a plain net.Dialer) so that it refuses any
// address that is not a loopback IP literal. It resolves nothing: names
// are refused too, since egress.Dialer always passes IPs.
func LoopbackOnly(next egress.DialFunc) egress.DialFunc {
	if next == nil {
		next = new(net.Dialer).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("egresstest: refusing to dial non-loopback %s: %w", addr, err)
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Unmap().IsLoopback() {
			return nil, fmt.Errorf("egresstest: refusing to dial non-loopback %s", addr)
		}
		return next(ctx, network, addr)
	}
}

// Dialer returns an egress.Dialer with the policy parsed from allow (for
// example "127.0.0.0/8,::1/128"), an empty StubResolver (only "localhost"
// resolves) and a LoopbackOnly dial. It panics on an invalid allow, a bug
// in the test. Replace Resolver to resolve more names.
func Dialer(allow string) *egress.Dialer {
	p, err := egress.ParsePolicy(allow)
	if err != nil {
		panic(err)
	}
	return &egress.Dialer{Policy: p, Resolver: StubResolver{}, Dial: LoopbackOnly(nil)}
}

// Client returns an egress.NewClient allowing loopback, reaching only
// loopback, with its idle connections closed when t ends.
func Client(t testing.TB) *http.Client {
	c := egress.NewClient(Dialer("127.0.0.0/8,::1/128"))
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// StubResolver resolves names from the map; "localhost" resolves to
// 127.0.0.1 unless the map says otherwise. Unknown
// names fail with a not-found *net.DNSError: tests never use real DNS.
type StubResolver map[string][]netip.Addr

var localhost = []netip.Addr{netip.MustParseAddr("127.0.0.1")}

// LookupNetIP implements egress.Resolver. network is "ip", "ip4" or "ip6".
func (r StubResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	addrs, ok := r[host]
	if !ok && host == "localhost" {
		addrs = localhost
	}
	var out []netip.Addr
	for _, a := range addrs {
		if network == "ip" || network == "ip4" && a.Unmap().Is4() || network == "ip6" && a.Is6() && !a.Is4In6() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host (egresstest.StubResolver)", Name: host, IsNotFound: true}
	}
	return out, nil
}

// Dialled is the address net/http's transport connects to for u (its
// canonicalAddr: a host that is not ASCII in IDNA's ASCII form, kept as
// it is when that fails; the scheme's port when none is written), in
// lower case but for an IPv6 zone: DNS names are not case sensitive,
// interface names are. Tests of where a request or a key goes compare it.
func Dialled(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	host := u.Hostname()
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			if v, err := idna.Lookup.ToASCII(host); err == nil {
				host = v
			}
			break
		}
	}
	host, zone, _ := strings.Cut(host, "%")
	if zone != "" {
		zone = "%" + zone
	}
	return net.JoinHostPort(strings.ToLower(host)+zone, port)
}

// Record makes d record every address its Dial is asked for (after the
// policy check, before the dial) and returns them as dialled so far: a
// test that a request was refused before anything was dialled reads it.
func Record(d *egress.Dialer) (dialled func() []string) {
	next := d.Dial
	if next == nil {
		next = LoopbackOnly(nil)
	}
	var mu sync.Mutex
	var addrs []string
	d.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		addrs = append(addrs, addr)
		mu.Unlock()
		return next(ctx, network, addr)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(addrs)
	}
}

// NamedClient is Client with each of names resolving to 127.0.0.1 (a host
// named like a remote one, dialled on loopback), plaintext as the hosts
// credentials may reach over http (egress.ParsePlaintextHosts), and its
// dials recorded (Record).
func NamedClient(t testing.TB, plaintext string, names ...string) (c *http.Client, dialled func() []string) {
	t.Helper()
	hosts, err := egress.ParsePlaintextHosts(plaintext)
	if err != nil {
		t.Fatal(err)
	}
	d := Dialer("127.0.0.0/8,::1/128")
	r := StubResolver{}
	for _, n := range names {
		r[n] = localhost
	}
	d.Resolver, d.Plaintext = r, hosts
	dialled = Record(d)
	c = egress.NewClient(d)
	t.Cleanup(c.CloseIdleConnections)
	return c, dialled
}
