package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// Resolver resolves host names; *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc dials one address, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// defaultDial is shared so that a Dialer without Dial costs nothing to
// build.
var defaultDial DialFunc = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext

// Dialer dials through the egress policy: it resolves the name itself,
// checks every address it is about to dial and dials that address, never
// the name, so what was checked is what is reached.
type Dialer struct {
	Policy   *Policy  // nil: the default policy
	Resolver Resolver // nil: net.DefaultResolver
	Dial     DialFunc // nil: a net.Dialer with a 10s timeout and 30s keep-alive
	// Plaintext lists the hosts credentials may reach over plain http
	// besides loopback (EnvPlaintextCredentialHosts; nil: none).
	Plaintext *PlaintextHosts
}

// DialContext connects to addr ("host:port") on a tcp network. It tries
// the allowed addresses of host in the resolver's order and returns the
// first connection; when every address is denied it returns the
// *DeniedError of the first.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var ipNetwork string
	switch network {
	case "tcp":
		ipNetwork = "ip"
	case "tcp4":
		ipNetwork = "ip4"
	case "tcp6":
		ipNetwork = "ip6"
	default:
		// The engine speaks HTTP: other networks (udp, unix) are never
		// legitimate here and unix sockets would bypass the address check.
		return nil, fmt.Errorf("egress: network %q not allowed", network)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		r := d.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		if ips, err = r.LookupNetIP(ctx, ipNetwork, host); err != nil {
			return nil, fmt.Errorf("egress: resolve %s: %w", host, err)
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("egress: resolve %s: no addresses", host)
		}
	}
	dial := d.Dial
	if dial == nil {
		dial = defaultDial
	}
	var denied, dialErr error
	for _, ip := range ips {
		if err := d.Policy.Check(host, ip); err != nil {
			if denied == nil {
				denied = err
			}
			continue
		}
		conn, err := dial(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		dialErr = errors.Join(dialErr, err)
		if ctx.Err() != nil {
			break
		}
	}
	if dialErr != nil {
		return nil, dialErr
	}
	return nil, denied
}

// MaxResponseHeaderBytes bounds an answer's headers: net/http's default
// of 10 MiB let a hostile upstream make one call allocate 46 MB, where
// real APIs send a few KiB (nginx in front of one refuses past 8 KiB).
const MaxResponseHeaderBytes = 1 << 20

// NewTransport returns a transport that dials through d and never through
// an environment proxy (a proxy would dial for us, past the check). It is
// tuned for many calls to a few hosts, and leaves decompression to the
// caller, which caps the decoded size. It refuses to send a request
// marked by WithCredentials over plain http (PlaintextError): every
// request of the engine's passes here, so that rule is decided here.
func NewTransport(d *Dialer) http.RoundTripper {
	return plaintextGuard{hosts: d.Plaintext, next: &http.Transport{
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		Proxy:                  nil,
		DialContext:            d.DialContext,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		ForceAttemptHTTP2:      true,
		DisableCompression:     true,
	}}
}

// NewClient returns a client using NewTransport(d) and CheckRedirect. It
// has no overall timeout: callers bound each call with its context.
func NewClient(d *Dialer) *http.Client {
	return &http.Client{Transport: NewTransport(d), CheckRedirect: CheckRedirect}
}
