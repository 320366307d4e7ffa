package connections

import (
	"net/url"
	"testing"
)

// TestIssuerRefusal: RFC 9207's rule on an authorization response's iss,
// by the provider's registered issuer and whether its metadata says it
// sends iss.
func TestIssuerRefusal(t *testing.T) {
	const issuer = "https://as.example"
	for _, c := range []struct {
		name      string
		issuer    string
		supported bool
		query     string
		want      string
	}{
		{"no iss, none expected", issuer, false, "code=c&state=s", ""},
		{"no issuer registered, no iss", "", false, "code=c", ""},
		{"the issuer", issuer, false, "code=c&iss=https%3A%2F%2Fas.example", ""},
		{"the issuer, required", issuer, true, "code=c&iss=https%3A%2F%2Fas.example", ""},
		{"another issuer", issuer, false, "code=c&iss=https%3A%2F%2Fevil.example", "issuer"},
		{"another issuer, required", issuer, true, "code=c&iss=https%3A%2F%2Fevil.example", "issuer"},
		{"the issuer with a trailing slash", issuer, false, "code=c&iss=https%3A%2F%2Fas.example%2F", "issuer"},
		{"an empty iss", issuer, false, "code=c&iss=", "issuer"},
		{"iss twice, the issuer first", issuer, false, "code=c&iss=https%3A%2F%2Fas.example&iss=https%3A%2F%2Fevil.example", "issuer"},
		{"iss twice, the issuer both times", issuer, true, "code=c&iss=https%3A%2F%2Fas.example&iss=https%3A%2F%2Fas.example", "issuer"},
		{"no iss, required", issuer, true, "code=c&state=s", "iss_missing"},
		{"an error answer without iss, required", issuer, true, "error=access_denied", "iss_missing"},
		{"iss, no issuer registered", "", false, "code=c&iss=https%3A%2F%2Fas.example", "issuer_unregistered"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := url.ParseQuery(c.query)
			if err != nil {
				t.Fatal(err)
			}
			if got := issuerRefusal(c.issuer, c.supported, q); got != c.want {
				t.Fatalf("issuerRefusal(%q, %v, %q) = %q, want %q", c.issuer, c.supported, c.query, got, c.want)
			}
		})
	}
}
