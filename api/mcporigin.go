package api

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/internal/header"
)

// codeOriginNotAllowed refuses a browser page of another site: the
// streamable HTTP transport's "servers MUST validate the Origin header"
// (issue 48 point 6), against DNS rebinding and cross-site requests that
// would ride on a token a browser extension or page holds.
const codeOriginNotAllowed = "origin_not_allowed"

// sameOrigin refuses, before anything else is read, a request whose
// Origin is not one of s.MCPOrigins. "null" (a sandboxed frame, a file://
// page) is never allowed; a request without Origin, which browsers always
// send on cross-origin POSTs, is a non-browser client's and is served.
func (s *Server) sameOrigin(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := header.Get(r.Header, "Origin")
		if o == "" {
			h.ServeHTTP(w, r)
			return
		}
		if norm, ok := Origin(o); !ok || !slices.Contains(s.MCPOrigins, norm) && !localPage(r, norm) {
			writeError(w, http.StatusForbidden, codeOriginNotAllowed,
				fmt.Sprintf("Origin %q may not call the MCP endpoints: a browser page must be served from BLINDEXEC_BROWSER_URL or from an origin listed in BLINDEXEC_ALLOWED_ORIGINS", o), nil)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// localPage reports a page of the machine the engine runs on calling it
// there: an origin on a loopback host, the request come to a loopback
// address (what the MCP SDKs allow a server bound to localhost, and the
// conformance suite's dns-rebinding-protection checks). A page elsewhere
// that reaches a loopback engine by DNS rebinding names its own host.
func localPage(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || !loopbackHost(u.Hostname()) {
		return false
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	host, _, err := net.SplitHostPort(local.String())
	return err == nil && loopbackHost(host)
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Origin is the serialisation browsers send of raw's origin (lowercase
// scheme://host, the port only when not the scheme's default), or false
// for anything but an http(s) origin ("null" included; "https://:", no
// host, too). An IPv6 zone
// (http://[fe80::1%25en0]) is none: browsers send none, and its host
// written back ("%" unescaped) is no URL's (fuzz78). The host is the one
// dialed (egress.Hostname: IDNA's lookup form), which is what a browser
// sends: an allowed https://bücher.example is https://xn--bcher-kva.example
// (small79), and a name IDNA refuses is no origin.
func Origin(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || strings.Contains(u.Host, "%") {
		return "", false
	}
	host, ok := egress.Hostname(u)
	if !ok {
		return "", false
	}
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" || (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return scheme + "://" + host, true
	}
	return scheme + "://" + host + ":" + port, true
}
