package auth_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress/egresstest"
)

// FuzzOrigin: auth.Origin is where the where-keys-go rule places a stored
// key (the import's settleHosts and the executor's Catalog.Elsewhere both
// compare its strings), from URLs an imported document, a row written by
// SQL or an MCP server's registration hold. For any URL it names an
// origin for, the origin is its own origin (normalised once), holds no
// userinfo, and is dialled where the URL is: the address net/http's
// transport connects to for the URL and for the origin is the same, so
// two URLs of one origin never send a key to two hosts.
func FuzzOrigin(f *testing.F) {
	for _, s := range []string{
		"https://api.example/v1", "HTTPS://API.Example:8443/x?y#z", "https://u:pw@api.example/",
		"https://api.example:443", "https://api.example:", "https://api.example./", "https://xn--bcher-kva.example/",
		"https://bücher.example/", "https://\u212aelvin.example/", "https://[::1]:8080/",
		"https://{region}.api.example/", "https://a.example#@evil.example", "https://a.example?@evil.example",
		"http://a.example@evil.example/", "https://%C3%A9.example/", "ftp://a.example/", "//a.example/x", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o := auth.Origin(raw)
		if o == "" {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%q: origin %q of a URL that does not parse: %v", raw, o, err)
		}
		if strings.ContainsAny(o, "@{}") {
			t.Fatalf("%q: origin %q holds userinfo or a template", raw, o)
		}
		if again := auth.Origin(o); again != o {
			t.Fatalf("%q: origin %q, whose own origin is %q", raw, o, again)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return // the rule's clients dial http(s) only
		}
		ou, err := url.Parse(o)
		if err != nil {
			t.Fatalf("%q: origin %q does not parse: %v", raw, o, err)
		}
		if got, want := egresstest.Dialled(ou), egresstest.Dialled(u); got != want {
			t.Fatalf("%q: dialled at %s, its origin %q at %s", raw, want, o, got)
		}
	})
}
