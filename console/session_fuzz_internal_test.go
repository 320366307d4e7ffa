package console

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
)

// FuzzSessionCookie: a session cookie a browser sends, whatever it holds,
// signs in only when this console signed it, unchanged and not expired:
// a signed cookie reads back as what was signed, and the same cookie with
// one character changed, or with another session's signature, is refused.
func FuzzSessionCookie(f *testing.F) {
	// Read "now" for good: the signed-out sessions are these, no database's.
	c := &Console{macKey: []byte("0123456789abcdef0123456789abcdef"), endRead: time.Now().Add(1000 * time.Hour), ended: map[string]bool{"ended": true}}
	future := time.Now().Add(time.Hour).Unix()
	f.Add(c.sign("h4sh", "sid1", time.Unix(future, 0)), "h4sh", "sid1", int64(3600), uint16(5))
	f.Add("v1.h.s.1.mac", "h", "ended", int64(60), uint16(0))
	f.Add("", "a.b", "c", int64(-1), uint16(1))
	f.Add("v1.h.s."+strconv.FormatInt(future, 10)+".", "", "", int64(1<<40), uint16(2))
	f.Fuzz(func(t *testing.T, cookie, hash, sid string, ttl int64, flip uint16) {
		read := func(value string) (sessionData, error) {
			r := &http.Request{Header: http.Header{"Cookie": {CookieName + "=" + value}}}
			return c.parse(r)
		}
		if got, err := read(cookie); err == nil && c.sign(got.hash, got.sid, got.expires) != cookie {
			t.Fatalf("%q signed in as %+v, which this console did not sign", cookie, got)
		} else if err != nil && err != errBadSession && err != api.ErrNoSession {
			t.Fatalf("%q: %v", cookie, err)
		}
		if ttl < 1 || ttl > 1<<40 || strings.Contains(hash+sid, ".") {
			return
		}
		exp := time.Unix(time.Now().Unix()+ttl, 0)
		signed := c.sign(hash, sid, exp)
		got, err := read(signed)
		switch {
		case sid == "ended":
			if err == nil {
				t.Fatal("a signed-out session signed in")
			}
			return
		case err != nil:
			// net/http drops a cookie value it cannot take: nothing signs in.
			if err != api.ErrNoSession && err != errBadSession {
				t.Fatalf("%q: %v", signed, err)
			}
			return
		case got.hash != hash || got.sid != sid || !got.expires.Equal(exp):
			t.Fatalf("%q read as %+v", signed, got)
		}
		b := []byte(signed)
		i := int(flip) % len(b)
		if b[i] = 'A'; b[i] == signed[i] {
			b[i] = 'B'
		}
		// The signature's last character holds bits base64 drops.
		if i != len(b)-1 {
			if got, err := read(string(b)); err == nil {
				t.Fatalf("%q, changed at %d, signed in as %+v", b, i, got)
			}
		}
		if other := c.sign(hash, sid+"x", exp); true {
			j := strings.LastIndexByte(other, '.')
			if _, err := read(signed[:strings.LastIndexByte(signed, '.')] + other[j:]); err == nil {
				t.Fatal("another session's signature signed in")
			}
		}
	})
}

// FuzzClientAddr: the address a sign-in is counted against is the
// request's own, unless it comes through a trusted proxy; then one of
// the X-Forwarded-For hops, every hop after it trusted: a client past
// the proxies cannot name an address the proxies did not add.
func FuzzClientAddr(f *testing.F) {
	f.Add("10.0.0.0/8, 192.0.2.1", "192.0.2.1:80", "203.0.113.66, 203.0.113.1, 10.1.2.3")
	f.Add("10.0.0.0/8", "198.51.100.9:1234", "203.0.113.1")
	f.Add("::ffff:10.0.0.0/104", "[::ffff:10.1.1.1]:1", "2001:db8::1")
	f.Add("192.0.2.1", "192.0.2.1:80", "fe80::1%eth0, garbage")
	f.Add("0.0.0.0/0,::/0", "[2001:db8::2]:443", " 1.2.3.4 ,,")
	f.Fuzz(func(t *testing.T, proxies, remote, xff string) {
		trusted, err := ParseProxies(proxies)
		if err != nil {
			if !strings.Contains(err.Error(), "is not an IP address or CIDR") {
				t.Fatalf("ParseProxies(%q): %v", proxies, err)
			}
			return
		}
		got := ClientAddr(remote, xff, trusted)
		host, _, err := net.SplitHostPort(remote)
		if err != nil {
			host = remote
		}
		if got == host {
			return
		}
		addr, err := netip.ParseAddr(host)
		if err != nil || !isTrusted(addr, trusted) {
			t.Fatalf("%s, not a trusted proxy, via %q: took %q", remote, xff, got)
		}
		// got is a hop, and every hop after it a trusted proxy's.
		hops := strings.Split(xff, ",")
		at := -1
		for i, h := range hops {
			if a, err := netip.ParseAddr(strings.TrimSpace(h)); err == nil && (a.Unmap().String() == got || strings.TrimSpace(h) == got) {
				at = i // the last such hop: the walk goes from the end
			}
		}
		if at < 0 {
			t.Fatalf("%s via %q, trusting %q: took %q, no hop", remote, xff, proxies, got)
		}
		for _, h := range hops[at+1:] {
			if a, err := netip.ParseAddr(strings.TrimSpace(h)); err != nil || !isTrusted(a, trusted) {
				t.Fatalf("%s via %q, trusting %q: took %q, before the untrusted hop %q", remote, xff, proxies, got, h)
			}
		}
	})
}
