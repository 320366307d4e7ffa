package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/idna"
)

// maxRedirects bounds a redirect chain, as net/http's default does.
const maxRedirects = 10

// alwaysSensitive are stripped on every cross-origin hop, whether or not
// the caller marked them.
var alwaysSensitive = [...]string{"Authorization", "Cookie", "Proxy-Authorization"}

type sensitiveKey struct{}

// sensitive is a context's mark: the headers CheckRedirect drops, and
// whether its requests carry credentials (WithCredentials). One value,
// so that a credentialed call costs no more allocations than before.
type sensitive struct {
	headers     []string
	credentials bool
}

func marksOf(ctx context.Context) sensitive {
	m, _ := ctx.Value(sensitiveKey{}).(sensitive)
	return m
}

// WithSensitiveHeaders returns a context marking the request header names
// that carry credentials, so that CheckRedirect drops them when a
// redirect leaves the original origin. It keeps a WithCredentials mark.
func WithSensitiveHeaders(ctx context.Context, names []string) context.Context {
	return context.WithValue(ctx, sensitiveKey{}, sensitive{headers: names, credentials: marksOf(ctx).credentials})
}

// SensitiveHeaders returns the names set by WithSensitiveHeaders or
// WithCredentials.
func SensitiveHeaders(ctx context.Context) []string {
	return marksOf(ctx).headers
}

// ErrTooManyRedirects is returned (wrapped in a *url.Error) after
// maxRedirects hops.
var ErrTooManyRedirects = errors.New("egress: stopped after 10 redirects")

// ErrBodyToAnotherOrigin is returned (wrapped in a *url.Error) for a 307
// or 308 redirect that would send the request's body to another origin.
var ErrBodyToAnotherOrigin = errors.New("egress: a redirect to another origin would send the request body there; not followed")

// CheckRedirect is an http.Client.CheckRedirect that follows at most 10
// hops and keeps credentials on their origin: once any hop's scheme, host
// or port differs from the first request's (an https to http downgrade
// included), the headers marked by WithSensitiveHeaders, Authorization,
// Cookie and Proxy-Authorization are removed. net/http copies the first
// request's headers onto every hop before calling this, so the check
// covers the whole chain, not just the last hop; the dialer re-checks the
// address policy on every hop by itself.
//
// A 307 or 308 hop out of the origin that would send the request body
// again is not followed (ErrBodyToAnotherOrigin): a body may carry a
// credential no header marks (an oauth2 client secret sent as a form
// parameter) or a value the operator fixed, and dropping it would send
// another request than the one built. A 301, 302 or 303 sends none.
//
// Referer is always removed: it would carry the previous URL, query-string
// credentials included, to the next host. A hop to http:// of a request
// marked by WithCredentials is refused by NewTransport's guard, which
// sees every hop (PlaintextError).
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return ErrTooManyRedirects
	}
	req.Header.Del("Referer")
	if len(via) == 0 {
		return nil
	}
	origin := OriginOf(via[0].URL)
	crossed := origin == "" || OriginOf(req.URL) != origin
	for _, r := range via[1:] {
		crossed = crossed || OriginOf(r.URL) != origin
	}
	if !crossed {
		return nil
	}
	if req.Body != nil && req.Body != http.NoBody {
		// The error is what the administrator reads: which redirect, to
		// which origin (never its path or query, the upstream's text), and
		// what to do.
		hop := "a redirect"
		if req.Response != nil {
			hop = fmt.Sprintf("a %d redirect", req.Response.StatusCode)
		}
		return fmt.Errorf("%w (%s to %s; if the API moved there, give the plugin or token URL its new address)", ErrBodyToAnotherOrigin, hop, OriginOf(req.URL))
	}
	for _, name := range alwaysSensitive {
		req.Header.Del(name)
	}
	for _, name := range SensitiveHeaders(req.Context()) {
		req.Header.Del(name)
	}
	return nil
}

// OriginOf is scheme://host:port with the scheme's default port made
// explicit and the host as Hostname gives it, so equal origins compare
// equal; "" when the host has no name the client dials.
func OriginOf(u *url.URL) string {
	host, ok := Hostname(u)
	if !ok {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// Hostname is u's host (without brackets or port) as the client dials
// it, in lower case: a name holding other than ASCII in IDNA's lookup
// form, as net/http converts it before it dials. Lower-casing alone took
// "apİ.example" for "api.example", though the client dials
// xn--api-bec.example (review78). ok is false for a name IDNA refuses.
func Hostname(u *url.URL) (string, bool) {
	h := u.Hostname()
	for i := range len(h) {
		if h[i] >= 0x80 {
			a, err := idna.Lookup.ToASCII(h)
			if err != nil {
				return "", false
			}
			h = a
			break
		}
	}
	return strings.ToLower(h), true
}
