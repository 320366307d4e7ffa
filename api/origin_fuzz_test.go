package api

import (
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress"
)

// FuzzBrowserOrigin: Origin normalises a browser's Origin header and each
// origin an operator allows (BLINDEXEC_BROWSER_URL, BLINDEXEC_ALLOWED_ORIGINS)
// to one form, which the MCP endpoints compare as strings. What it takes
// is its own normal form (the header a browser sends for it is taken as
// it), a URL that names the same scheme, host and port, and holds no
// userinfo, path or case of its own, its host the one dialed (IDNA's
// ASCII form, what a browser sends): two writings of one origin compare
// equal, and localPage reads the host it compares.
func FuzzBrowserOrigin(f *testing.F) {
	for _, s := range []string{
		"https://console.example", "HTTPS://Console.Example:443", "http://localhost:8080", "http://[::1]:80",
		"https://u:p@console.example", "null", "https://console.example/path?q#f",
		" https://console.example ", "https://xn--bcher-kva.example", "https://bücher.example", "http://127.0.0.1:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o, ok := Origin(raw)
		if !ok {
			return
		}
		if again, ok := Origin(o); !ok || again != o {
			t.Fatalf("%q: origin %q, which is read as %q (%v)", raw, o, again, ok)
		}
		u, err := url.Parse(o)
		if err != nil {
			t.Fatalf("%q: origin %q does not parse: %v", raw, o, err)
		}
		in, _ := url.Parse(strings.TrimSpace(raw))
		dialed, _ := egress.Hostname(in)
		if u.User != nil || u.Path != "" || u.RawQuery != "" || u.Hostname() != dialed {
			t.Fatalf("%q: origin %q, another host than %q or more than an origin", raw, o, in.Hostname())
		}
	})
}
