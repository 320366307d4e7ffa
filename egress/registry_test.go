package egress_test

import (
	"net/netip"
	"testing"

	"github.com/blindexec/blindexec/egress"
)

// TestSpecialPurposeVerdicts holds the default policy's verdict on an
// address of every entry of the IANA IPv4 and IPv6 special-purpose address
// registries, and on the ranges the guard adds. Each row cites its entry
// as the registry CSVs have it (iana-ipv4-special-registry-1.csv and
// iana-ipv6-special-registry-1.csv as fetched from www.iana.org on
// 2026-07-18, copied from a public document that quotes both verbatim,
// found with the session library's code search, stored file id
// 56969671233; see iana/README.md): block, name, RFC, "Globally Reachable".
// False, N/A or an empty cell (a terminated entry) is denied; a True entry
// is allowed unless it lies inside a denied one.
func TestSpecialPurposeVerdicts(t *testing.T) {
	tests := []struct {
		ip     string
		denied bool
		entry  string
	}{
		// IPv4 registry.
		{"0.1.2.3", true, `0.0.0.0/8 "This network" [RFC791] False`},
		{"0.0.0.0", true, `0.0.0.0/32 "This host on this network" [RFC1122] False`},
		{"10.20.30.40", true, "10.0.0.0/8 Private-Use [RFC1918] False"},
		{"100.64.0.1", true, "100.64.0.0/10 Shared Address Space [RFC6598] False"},
		{"127.0.0.1", true, "127.0.0.0/8 Loopback [RFC1122] False [1]"},
		{"169.254.169.254", true, "169.254.0.0/16 Link Local [RFC3927] False"},
		{"172.16.0.1", true, "172.16.0.0/12 Private-Use [RFC1918] False"},
		{"192.0.0.100", true, "192.0.0.0/24 IETF Protocol Assignments [RFC6890] False"},
		{"192.0.0.1", true, "192.0.0.0/29 IPv4 Service Continuity Prefix [RFC7335] False"},
		{"192.0.0.8", true, "192.0.0.8/32 IPv4 dummy address [RFC7600] False"},
		{"192.0.0.9", true, "192.0.0.9/32 Port Control Protocol Anycast [RFC7723] True, inside 192.0.0.0/24 (False)"},
		{"192.0.0.10", true, "192.0.0.10/32 Traversal Using Relays around NAT Anycast [RFC8155] True, inside 192.0.0.0/24 (False)"},
		{"192.0.0.170", true, "192.0.0.170/32 NAT64/DNS64 Discovery [RFC8880][RFC7050] False"},
		{"192.0.0.171", true, "192.0.0.171/32 NAT64/DNS64 Discovery [RFC8880][RFC7050] False (second block of the cell)"},
		{"192.0.2.1", true, "192.0.2.0/24 Documentation (TEST-NET-1) [RFC5737] False"},
		{"192.31.196.1", false, "192.31.196.0/24 AS112-v4 [RFC7535] True"},
		{"192.52.193.1", false, "192.52.193.0/24 AMT [RFC7450] True"},
		{"192.88.99.1", true, "192.88.99.0/24 Deprecated (6to4 Relay Anycast) [RFC7526] terminated 2015-03, empty"},
		{"192.88.99.2", true, "192.88.99.2/32 6a44-relay anycast address [RFC6751] False"},
		{"192.168.1.1", true, "192.168.0.0/16 Private-Use [RFC1918] False"},
		{"192.175.48.1", false, "192.175.48.0/24 Direct Delegation AS112 Service [RFC7534] True"},
		{"198.19.255.1", true, "198.18.0.0/15 Benchmarking [RFC2544] False"},
		{"198.51.100.7", true, "198.51.100.0/24 Documentation (TEST-NET-2) [RFC5737] False"},
		{"203.0.113.5", true, "203.0.113.0/24 Documentation (TEST-NET-3) [RFC5737] False"},
		{"240.0.0.1", true, "240.0.0.0/4 Reserved [RFC1112] False"},
		{"255.255.255.255", true, "255.255.255.255/32 Limited Broadcast [RFC8190][RFC919] False"},

		// IPv6 registry.
		{"::1", true, "::1/128 Loopback Address [RFC4291] False"},
		{"::", true, "::/128 Unspecified Address [RFC4291] False"},
		{"::ffff:127.0.0.1", true, "::ffff:0:0/96 IPv4-mapped Address [RFC4291] False; unmapped, 127.0.0.0/8 (False)"},
		{"::ffff:8.8.8.8", false, "::ffff:0:0/96 IPv4-mapped Address [RFC4291]: unmapped, 8.8.8.8 is in no entry"},
		{"64:ff9b::8.8.8.8", false, "64:ff9b::/96 IPv4-IPv6 Translat. [RFC6052] True; the IPv4 inside is in no entry"},
		{"64:ff9b::169.254.169.254", true, "64:ff9b::/96 IPv4-IPv6 Translat. [RFC6052] True; the IPv4 inside is in 169.254.0.0/16 (False)"},
		{"64:ff9b::203.0.113.5", true, "64:ff9b::/96 IPv4-IPv6 Translat. [RFC6052] True; the IPv4 inside is in 203.0.113.0/24 (False)"},
		{"64:ff9b:1::808:808", true, "64:ff9b:1::/48 IPv4-IPv6 Translat. [RFC8215] False"},
		{"100::1", true, "100::/64 Discard-Only Address Block [RFC6666] False"},
		{"100:0:0:1::1", true, "100:0:0:1::/64 Dummy IPv6 Prefix [RFC9780] False"},
		{"2001:100::1", true, "2001::/23 IETF Protocol Assignments [RFC2928] False [1]"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", true, "2001::/32 TEREDO [RFC4380][RFC8190] N/A"},
		{"2001:1::1", true, "2001:1::1/128 Port Control Protocol Anycast [RFC7723] True, inside 2001::/23 (False)"},
		{"2001:1::2", true, "2001:1::2/128 Traversal Using Relays around NAT Anycast [RFC8155] True, inside 2001::/23 (False)"},
		{"2001:1::3", true, "2001:1::3/128 DNS-SD Service Registration Protocol Anycast [RFC9665] True, inside 2001::/23 (False)"},
		{"2001:2::1", true, "2001:2::/48 Benchmarking [RFC5180] False"},
		{"2001:3::1", true, "2001:3::/32 AMT [RFC7450] True, inside 2001::/23 (False)"},
		{"2001:4:112::1", true, "2001:4:112::/48 AS112-v6 [RFC7535] True, inside 2001::/23 (False)"},
		{"2001:10::1", true, "2001:10::/28 Deprecated (previously ORCHID) [RFC4843] terminated 2014-03, empty"},
		{"2001:20::1", true, "2001:20::/28 ORCHIDv2 [RFC7343] True, inside 2001::/23 (False)"},
		{"2001:30::1", true, "2001:30::/28 Drone Remote ID Protocol Entity Tags (DETs) Prefix [RFC9374] True, inside 2001::/23 (False)"},
		{"2001:db8::1", true, "2001:db8::/32 Documentation [RFC3849] False"},
		{"2002:808:808::1", true, "2002::/16 6to4 [RFC3056] N/A, whatever the IPv4 inside"},
		{"2620:4f:8000::1", false, "2620:4f:8000::/48 Direct Delegation AS112 Service [RFC7534] True"},
		{"3fff::1", true, "3fff::/20 Documentation [RFC9637] False"},
		{"5f00::1", true, "5f00::/16 Segment Routing (SRv6) SIDs [RFC9602] False"},
		{"fd00::1", true, "fc00::/7 Unique-Local [RFC4193][RFC8190] False [4]"},
		{"fe80::1", true, "fe80::/10 Link-Local Unicast [RFC4291] False"},

		// Outside the registries.
		{"224.0.0.1", true, "multicast 224.0.0.0/4 (IPv4 Multicast Address Space registry)"},
		{"ff0e::1", true, "multicast ff00::/8 (IPv6 Multicast Address Space registry)"},
		{"::ffff:0:7f00:1", true, "::ffff:0:0:0/96 IPv4-translated (SIIT, RFC 2765): not in the registry, denied"},
		{"::ffff:0:808:808", true, "::ffff:0:0:0/96 IPv4-translated: denied whatever the IPv4 inside"},
		{"::8.8.8.8", true, "::/96 IPv4-compatible (deprecated, RFC 4291): not in the registry, denied"},
		{"fec0::1", true, "fec0::/10 site-local (deprecated, RFC 3879): not in the registry, denied"},
		{"8.8.8.8", false, "in no entry"},
		{"2001:200::1", false, "in no entry: just past 2001::/23"},
		{"2606:4700::1111", false, "in no entry"},
	}
	var p *egress.Policy
	for _, tt := range tests {
		err := p.Check("h", netip.MustParseAddr(tt.ip))
		if got := err != nil; got != tt.denied {
			t.Errorf("%s (%s): denied = %v, want %v", tt.ip, tt.entry, got, tt.denied)
		}
	}
}
