package connections

import (
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// FuzzGrantedScopes: a token response's scope is the provider's text,
// shown on a page, in the console and in a terminal: what is kept of it
// is its scope tokens as RFC 6749 §3.3 writes them (%x21 / %x23-5B /
// %x5D-7E: no space, quote, backslash, control, escape or bidi control),
// each one of the response's, in order.
func FuzzGrantedScopes(f *testing.F) {
	f.Add("repo read:org")
	f.Add("a\x1b[31mred b\u202eevil \"q\" c\\d")
	f.Add("  \t\n")
	f.Add("openid profile email https://www.googleapis.com/auth/drive.readonly")
	f.Fuzz(func(t *testing.T, scope string) {
		got := grantedScopes((&oauth2.Token{AccessToken: "x"}).WithExtra(map[string]any{"scope": scope}))
		fields := strings.Fields(scope)
		i := 0
		for _, sc := range got {
			for _, c := range []byte(sc) {
				if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
					t.Fatalf("scope %q kept %q", scope, sc)
				}
			}
			for i < len(fields) && fields[i] != sc {
				i++
			}
			if i == len(fields) {
				t.Fatalf("scope %q kept %q, not one of its tokens in order", scope, sc)
			}
			i++
		}
	})
}
