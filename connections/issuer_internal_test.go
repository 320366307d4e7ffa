package connections

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
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

// FuzzIssuerRefusal: whatever query a browser brings to the callback,
// read as the callback reads it (the request line net/http parses, its
// URL's Query), an answer is let through only with exactly one iss that
// is the registered issuer, or with none where the provider is not
// registered as always sending one; and the same answer written again
// (Encode) is decided alike.
func FuzzIssuerRefusal(f *testing.F) {
	for _, q := range []string{
		"code=c&state=s", "code=c&iss=https%3A%2F%2Fas.example", "code=c&iss=https%3A%2F%2Fevil.example",
		"code=c&iss=https%3A%2F%2Fas.example%2F", "code=c&iss=", "code=c&iss=https%3A%2F%2Fas.example&iss=https%3A%2F%2Fevil.example",
		"error=access_denied&error_description=x", "%69ss=https://as.example&code=c", "iss=https://as.example;x&code=c",
		"iss", "iss&iss=https://as.example", "code=c&state=s&iss=https://as.example#frag", "iss=%zz&code=c",
	} {
		f.Add(q, uint8(0), false)
		f.Add(q, uint8(1), true)
	}
	issuers := []string{"https://as.example", "", "https://as.example/"}
	f.Fuzz(func(t *testing.T, raw string, which uint8, supported bool) {
		issuer := issuers[int(which)%len(issuers)]
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET /oauth/callback?" + raw + " HTTP/1.1\r\nHost: e.example\r\n\r\n")))
		if err != nil {
			return
		}
		q := r.URL.Query()
		why := issuerRefusal(issuer, supported, q)
		iss, sent := q["iss"]
		let := !sent && !supported || sent && issuer != "" && len(iss) == 1 && iss[0] == issuer
		if (why == "") != let {
			t.Fatalf("issuerRefusal(%q, %v, %q) = %q (iss %q)", issuer, supported, raw, why, iss)
		}
		again, err := url.ParseQuery(q.Encode())
		if err != nil {
			t.Fatalf("%q written again does not parse: %v", q.Encode(), err)
		}
		if w := issuerRefusal(issuer, supported, again); w != why {
			t.Fatalf("%q: %q, written again %q: %q", raw, why, q.Encode(), w)
		}
	})
}
