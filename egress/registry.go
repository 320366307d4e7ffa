package egress

import (
	"embed"
	"encoding/csv"
	"fmt"
	"net/netip"
	"strings"
)

// RegistryDate is when the embedded IANA special-purpose address
// registries were fetched (iana/README.md).
const RegistryDate = "2026-07-18"

//go:embed iana/ipv4-special-registry.csv iana/ipv6-special-registry.csv
var registries embed.FS

// specialDenied are the registry entries whose "Globally Reachable" is
// False, N/A or empty. An entry marked True inside one of them (192.0.0.9/32
// inside 192.0.0.0/24, 2001:20::/28 inside 2001::/23) stays denied: only the
// denied ranges are kept, so nothing reopens a part of one.
var specialDenied = mustParseRegistries()

func mustParseRegistries() []netip.Prefix {
	var out []netip.Prefix
	for _, name := range []string{"iana/ipv4-special-registry.csv", "iana/ipv6-special-registry.csv"} {
		f, err := registries.Open(name)
		if err != nil {
			panic(err)
		}
		denied, err := parseRegistry(csv.NewReader(f))
		f.Close()
		if err != nil {
			panic(fmt.Sprintf("egress: %s: %v", name, err))
		}
		out = append(out, denied...)
	}
	return out
}

// parseRegistry reads an IANA special-purpose registry CSV and returns the
// blocks of its entries that are not globally reachable.
func parseRegistry(r *csv.Reader) ([]netip.Prefix, error) {
	rows, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 || len(rows[0]) < 9 || rows[0][0] != "Address Block" || rows[0][8] != "Globally Reachable" {
		return nil, fmt.Errorf("not an IANA special-purpose registry: header %q", rows[0])
	}
	var denied []netip.Prefix
	for i, row := range rows[1:] {
		switch reach := withoutFootnote(row[8]); reach {
		case "True":
			continue
		case "False", "N/A", "": // empty: a terminated entry
		default:
			return nil, fmt.Errorf("row %d: Globally Reachable %q is not True, False or N/A", i+2, row[8])
		}
		// One cell may hold several blocks: "192.0.0.170/32, 192.0.0.171/32".
		for block := range strings.SplitSeq(row[0], ",") {
			p, err := netip.ParsePrefix(withoutFootnote(block))
			if err != nil {
				return nil, fmt.Errorf("row %d: address block: %w", i+2, err)
			}
			denied = append(denied, p)
		}
	}
	return denied, nil
}

// withoutFootnote drops IANA's footnote marks: "False [1]" is "False".
func withoutFootnote(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, " ["); i >= 0 {
		s = s[:i]
	}
	return s
}
