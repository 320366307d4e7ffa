package egress

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// EnvPlaintextCredentialHosts names the environment variable listing the
// hosts credentials may reach over plain http besides loopback.
const EnvPlaintextCredentialHosts = "BLINDEXEC_PLAINTEXT_CREDENTIAL_HOSTS"

// WithCredentials returns a context marking its requests as carrying
// credentials the engine added (a user's key in a header, query or cookie,
// a connection's token, a client secret in a token request's header or
// body, a sealed URL's secret): a transport of NewTransport refuses to
// send them over plain http (a *PlaintextError) unless the host is
// loopback or listed in the Dialer's Plaintext. A request without the mark
// goes over http as before. headers, as for WithSensitiveHeaders, are
// dropped by CheckRedirect on a cross-origin hop (nil: ctx's, if any).
func WithCredentials(ctx context.Context, headers []string) context.Context {
	if headers == nil {
		headers = SensitiveHeaders(ctx)
	}
	return context.WithValue(ctx, sensitiveKey{}, sensitive{headers: headers, credentials: true})
}

// PlaintextError refuses a request carrying credentials to an http://
// URL, before anything is dialled. Callers branch on it with errors.As.
type PlaintextError struct {
	Origin string // the request's origin (OriginOf): never its path or query
}

func (e *PlaintextError) Error() string {
	return fmt.Sprintf("egress: credentials are not sent in plain text, to %s: expected an https:// URL (or, for an internal service on a network of its own, its host in %s)",
		e.Origin, EnvPlaintextCredentialHosts)
}

// PlaintextHosts are the hosts, or origins, credentials may reach over
// plain http besides loopback. The zero value (and nil) lists none.
type PlaintextHosts struct {
	hosts   map[string]bool // any port
	origins map[string]bool // http://host:port
}

// ParsePlaintextHosts parses a comma-separated list of host names, IP
// literals ("10.0.0.5", "[fd00::1]") and http origins
// ("http://ruoyi.corp:8080", that port only).
func ParsePlaintextHosts(list string) (*PlaintextHosts, error) {
	p := &PlaintextHosts{hosts: map[string]bool{}, origins: map[string]bool{}}
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if strings.Contains(entry, "://") {
			u, err := url.Parse(entry)
			o := ""
			if err == nil && strings.EqualFold(u.Scheme, "http") && (u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.User == nil {
				o = OriginOf(u)
			}
			if o == "" || u.Hostname() == "" {
				return nil, fmt.Errorf("%s: %q is not a host name, an IP or an http origin (http://host[:port])", EnvPlaintextCredentialHosts, entry)
			}
			p.origins[o] = true
			continue
		}
		host := normalizeHost(strings.TrimSuffix(strings.TrimPrefix(entry, "["), "]"))
		if _, err := netip.ParseAddr(host); err != nil && !validHostName(host) {
			return nil, fmt.Errorf("%s: %q is not a host name, an IP or an http origin (http://host[:port])", EnvPlaintextCredentialHosts, entry)
		}
		p.hosts[host] = true
	}
	return p, nil
}

// Allows reports whether credentials may go to u in plain text: u is not
// http (https keeps them), or its host is loopback or listed. A nil p
// lists none: loopback only (what an import can tell of a document's
// URLs, the operator's list aside).
func (p *PlaintextHosts) Allows(u *url.URL) bool {
	if !strings.EqualFold(u.Scheme, "http") {
		return true
	}
	host, ok := Hostname(u)
	if !ok {
		return false
	}
	host = strings.TrimSuffix(host, ".")
	// Loopback by what the URL says, not by what a name resolves to: tests
	// and local sidecars; the traffic never leaves the machine.
	if ip, err := netip.ParseAddr(host); host == "localhost" || err == nil && ip.Unmap().IsLoopback() {
		return true
	}
	return p != nil && (p.hosts[host] || p.origins[OriginOf(u)])
}

// plaintextGuard refuses a request marked by WithCredentials to an http
// URL its hosts do not allow, before the transport dials or reuses a
// connection. It sees every hop of a redirect chain: a hop still on the
// first request's origin carries the credentials, and an https to http
// downgrade is refused too rather than followed, though CheckRedirect has
// dropped the marked headers (its answer would come back unauthenticated
// and open to tampering, and a query the server built may hold what the
// call sent).
type plaintextGuard struct {
	next  *http.Transport
	hosts *PlaintextHosts
}

func (g plaintextGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if marksOf(req.Context()).credentials && !g.hosts.Allows(req.URL) {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, &PlaintextError{Origin: OriginOf(req.URL)}
	}
	return g.next.RoundTrip(req)
}

// CloseIdleConnections closes the transport's idle connections, as
// http.Client.CloseIdleConnections expects of its transport.
func (g plaintextGuard) CloseIdleConnections() { g.next.CloseIdleConnections() }
