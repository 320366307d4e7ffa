// Package egress guards the engine's outbound connections: calls to
// loopback, private, link-local (cloud metadata included) and every other
// special-purpose address that is not globally reachable are refused
// unless an operator allowlist opens them.
//
// The guard sits in the dialer, after DNS resolution, and dials the very
// address it checked, so a name that resolves to a public address for the
// check and to 127.0.0.1 for the dial (DNS rebinding) cannot slip through;
// every redirect hop dials through it again.
package egress

import (
	"cmp"
	"fmt"
	"net/netip"
	"strings"
)

// EnvAllow names the environment variable holding the operator allowlist.
const EnvAllow = "BLINDEXEC_EGRESS_ALLOW"

// extraDenied are the ranges refused beyond the IANA special-purpose
// registries (registry.go) and multicast, which has registries of its own.
// 6to4 (2002::/16) and Teredo (2001::/32) need no line here: the registry
// marks them N/A. Each tunnels to an IPv4 address (2002:7f00:1::/48 is
// 127.0.0.1's) through a relay; the allowlist can reopen them.
var extraDenied = []netip.Prefix{
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated, RFC 4291)
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated (SIIT, RFC 2765): reaches the IPv4 inside
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated, RFC 3879)
}

// nat64 is the well-known NAT64 prefix: its addresses reach the IPv4
// address in their last 32 bits, which is checked in its place.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Policy decides which addresses outbound calls may reach. The zero value
// (and a nil *Policy) is the default: every internal address denied.
type Policy struct {
	prefixes []netip.Prefix
	hosts    map[string]bool // exact names, lower case, no trailing dot
	suffixes []string        // from "*.example.com": ".example.com"
	closed   string          // Closed's reason
}

// Closed is the default policy for calls that BLINDEXEC_EGRESS_ALLOW does
// not open (a per-user token's own inline plugin, a caller's spec_path):
// its denials give reason instead of pointing at the setting, which an
// operator who set it would find already set.
func Closed(reason string) *Policy { return &Policy{closed: reason} }

// ParsePolicy parses an allowlist (the value of BLINDEXEC_EGRESS_ALLOW):
// comma-separated CIDRs ("10.0.0.0/8"), single IPs ("192.168.1.5",
// "::1") and host names ("internal.example.com", or "*.example.com" for
// any subdomain). Host names match the request's host case-insensitively
// and open whatever the name resolves to, so only list names whose DNS
// you control. An empty string is the default policy.
func ParsePolicy(allow string) (*Policy, error) {
	p := &Policy{}
	for entry := range strings.SplitSeq(allow, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if err := p.add(entry); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvAllow, err)
		}
	}
	return p, nil
}

func (p *Policy) add(entry string) error {
	if strings.Contains(entry, "/") {
		pfx, err := netip.ParsePrefix(entry)
		if err != nil {
			return fmt.Errorf("entry %q is not a valid CIDR: %w", entry, err)
		}
		p.prefixes = append(p.prefixes, pfx)
		return nil
	}
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(entry, "["), "]")); err == nil {
		if ip.Zone() != "" {
			return fmt.Errorf("entry %q: an allowed IP must not carry a zone", entry)
		}
		p.prefixes = append(p.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
		return nil
	}
	name := normalizeHost(entry)
	wildcard := strings.HasPrefix(name, "*.")
	if wildcard {
		name = name[2:]
	}
	if !validHostName(name) {
		return fmt.Errorf("entry %q is not a CIDR, an IP address or a host name", entry)
	}
	if wildcard {
		p.suffixes = append(p.suffixes, "."+name)
		return nil
	}
	if p.hosts == nil {
		p.hosts = make(map[string]bool)
	}
	p.hosts[name] = true
	return nil
}

// Check reports whether a connection to ip, reached through the name host
// (host may be the IP literal itself), is allowed: nil, or a *DeniedError.
func (p *Policy) Check(host string, ip netip.Addr) error {
	ip = ip.WithZone("")
	if !denied(ip) || p.allows(host, ip) {
		return nil
	}
	hint := "allow it with " + EnvAllow
	if p != nil && p.closed != "" {
		hint = p.closed
	}
	return &DeniedError{Host: host, IP: ip, Hint: hint}
}

func (p *Policy) allows(host string, ip netip.Addr) bool {
	if p == nil {
		return false
	}
	unmapped := ip.Unmap()
	for _, pfx := range p.prefixes {
		if pfx.Contains(ip) || pfx.Contains(unmapped) {
			return true
		}
	}
	if len(p.hosts) == 0 && len(p.suffixes) == 0 {
		return false
	}
	host = normalizeHost(host)
	if p.hosts[host] {
		return true
	}
	for _, s := range p.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// denied reports whether the default policy refuses ip: every entry of
// the IANA special-purpose registries that is not globally reachable
// (loopback, private, link-local and cloud metadata, CGNAT, documentation,
// benchmarking, reserved, ...), multicast, the ranges of extraDenied, and
// the IPv4-mapped or NAT64 forms of any of those. An invalid address is
// denied.
func denied(ip netip.Addr) bool {
	if !ip.IsValid() {
		return true
	}
	ip = ip.WithZone("").Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	if ip.IsMulticast() {
		return true
	}
	for _, ranges := range [][]netip.Prefix{specialDenied, extraDenied} {
		for _, pfx := range ranges {
			if pfx.Contains(ip) {
				return true
			}
		}
	}
	return false
}

// DeniedError is the error of a connection the policy refuses.
type DeniedError struct {
	Host string     // the name dialed (or the IP literal)
	IP   netip.Addr // the address it resolved to
	Hint string     // what would open it, or why nothing does
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("egress denied: %s resolves to %s, not a globally reachable address (loopback, private, link-local or another special-purpose range); %s",
		e.Host, e.IP, cmp.Or(e.Hint, "allow it with "+EnvAllow))
}

func normalizeHost(h string) string {
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// validHostName accepts DNS names: dot-separated labels of letters,
// digits, '-' and '_' (seen in internal names), 1 to 63 bytes each.
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
