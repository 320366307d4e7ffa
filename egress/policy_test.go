package egress_test

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress"
)

func TestDefaultPolicy(t *testing.T) {
	denied := []string{
		"127.0.0.1", "127.255.255.254", "10.1.2.3", "172.16.0.1", "172.31.255.255",
		"192.168.1.1", "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.254",
		"0.0.0.0", "0.1.2.3", "255.255.255.255", "224.0.0.1", "240.0.0.1",
		"::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "ff02::1", "fec0::1",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::ffff:100.64.0.1", "::ffff:0.0.0.1", "::127.0.0.1",
		"64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe",
		"2002:7f00:1::1", "2002:a9fe:a9fe::", "2002:cb00:7105::1", // 6to4, whatever the IPv4 inside
		"2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::1", // Teredo
	}
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "11.0.0.1",
		"2003::1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::1.1.1.1",
	}
	var p *egress.Policy // nil is the default policy
	for _, s := range denied {
		ip := netip.MustParseAddr(s)
		err := p.Check("host.example", ip)
		var de *egress.DeniedError
		if !errors.As(err, &de) {
			t.Errorf("Check(%s) = %v, want *DeniedError", s, err)
			continue
		}
		if de.Host != "host.example" || de.IP != ip.WithZone("") {
			t.Errorf("Check(%s): DeniedError{%q, %s}", s, de.Host, de.IP)
		}
	}
	for _, s := range allowed {
		if err := p.Check("host.example", netip.MustParseAddr(s)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", s, err)
		}
	}
	if err := p.Check("x", netip.Addr{}); err == nil {
		t.Error("Check(invalid addr) = nil, want denied")
	}
}

func TestDeniedErrorMessage(t *testing.T) {
	err := (&egress.Policy{}).Check("metadata.internal", netip.MustParseAddr("169.254.169.254"))
	want := "egress denied: metadata.internal resolves to 169.254.169.254, not a globally reachable address (loopback, private, link-local or another special-purpose range); allow it with BLINDEXEC_EGRESS_ALLOW"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	// A closed policy says why nothing opens it, not to set the allowlist;
	// a nil policy is the default's.
	err = egress.Closed("a per-user token's own inline plugin stays under the default deny").Check("x", netip.MustParseAddr("10.0.0.1"))
	if want := "egress denied: x resolves to 10.0.0.1, not a globally reachable address (loopback, private, link-local or another special-purpose range); a per-user token's own inline plugin stays under the default deny"; err == nil || err.Error() != want {
		t.Errorf("closed: %v\nwant %s", err, want)
	}
	if err := (*egress.Policy)(nil).Check("x", netip.MustParseAddr("10.0.0.1")); err == nil || !strings.HasSuffix(err.Error(), "allow it with BLINDEXEC_EGRESS_ALLOW") {
		t.Errorf("nil policy: %v", err)
	}
}

func TestParsePolicyAllowlist(t *testing.T) {
	p, err := egress.ParsePolicy(" 10.0.0.0/8 , 192.168.1.5,::1, [fd00::7], 172.16.5.9/16, Internal.Example.COM., *.corp.example,,")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host, ip string
		ok       bool
	}{
		{"a", "10.200.0.1", true},
		{"a", "::ffff:10.200.0.1", true}, // the mapped form of an allowed v4
		{"a", "192.168.1.5", true},
		{"a", "192.168.1.6", false},
		{"a", "::1", true},
		{"a", "fd00::7", true},
		{"a", "172.16.200.1", true}, // host bits of the CIDR are ignored
		{"a", "172.17.0.1", false},
		{"a", "127.0.0.1", false},
		{"internal.example.com", "127.0.0.1", true},
		{"INTERNAL.example.com.", "169.254.169.254", true},
		{"other.example.com", "127.0.0.1", false},
		{"x.internal.example.com", "127.0.0.1", false}, // exact names do not match subdomains
		{"api.corp.example", "10.9.9.9", true},
		{"a.b.corp.example", "192.168.9.9", true},
		{"corp.example", "192.168.9.9", false}, // *. matches subdomains only
		{"evilcorp.example", "192.168.9.9", false},
	}
	for _, tt := range tests {
		err := p.Check(tt.host, netip.MustParseAddr(tt.ip))
		if (err == nil) != tt.ok {
			t.Errorf("Check(%q, %s) = %v, want allowed=%v", tt.host, tt.ip, err, tt.ok)
		}
	}
}

// Issue 13, point 4: the allowlist reopens the 6to4 and Teredo ranges.
func TestAllowlistReopensTunnels(t *testing.T) {
	p, err := egress.ParsePolicy("2002::/16,2001::/32")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"2002:cb00:7105::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2"} {
		if err := p.Check("h", netip.MustParseAddr(s)); err != nil {
			t.Errorf("Check(%s) = %v with the range allowed", s, err)
		}
	}
}

func TestParsePolicyErrors(t *testing.T) {
	for _, bad := range []string{
		"10.0.0.0/33", "10.0.0/8", "not a host", "exa mple.com", "-bad.example", "a..b",
		"*.", "*", "http://example.com", "example.com:443", "fe80::1%eth0", "ok.example,bad_entry!",
		strings.Repeat("a", 64) + ".example",
	} {
		_, err := egress.ParsePolicy(bad)
		if err == nil {
			t.Errorf("ParsePolicy(%q) = nil error", bad)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "BLINDEXEC_EGRESS_ALLOW") {
			t.Errorf("ParsePolicy(%q): error %q does not name the variable", bad, msg)
		}
		entry := bad[strings.LastIndex(bad, ",")+1:]
		if !strings.Contains(msg, strconv.Quote(entry)) {
			t.Errorf("ParsePolicy(%q): error %q does not name the entry %q", bad, msg, entry)
		}
	}
	if p, err := egress.ParsePolicy(""); err != nil || p == nil {
		t.Errorf(`ParsePolicy("") = %v, %v`, p, err)
	}
}

func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"", "10.0.0.0/8", "::1,localhost", "*.example.com", "a,,b", "[::1]", "1.2.3.4/99", "fe80::1%eth0"} {
		f.Add(s)
	}
	public := netip.MustParseAddr("8.8.8.8")
	metadata := netip.MustParseAddr("169.254.169.254")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := egress.ParsePolicy(s)
		if err != nil {
			// The error names one of the entries, quoted.
			named := false
			for e := range strings.SplitSeq(s, ",") {
				if e = strings.TrimSpace(e); e != "" && strings.Contains(err.Error(), strconv.Quote(e)) {
					named = true
				}
			}
			if !named {
				t.Errorf("ParsePolicy(%q): error %q names no entry", s, err)
			}
			return
		}
		// An allowlist only opens: public addresses stay allowed.
		if err := p.Check("", public); err != nil {
			t.Errorf("ParsePolicy(%q) denies a public address: %v", s, err)
		}
		// The metadata address is opened only by an entry that covers it.
		if p.Check("", metadata) == nil && !strings.ContainsAny(s, "/1") {
			t.Errorf("ParsePolicy(%q) allows 169.254.169.254", s)
		}
	})
}
