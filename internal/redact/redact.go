// Package redact writes values that may hold a credential (a DSN, a URL)
// as messages and stored rows show them: without userinfo, and without the
// values of query and path parameters named as credentials. It imports no
// package of this module, so that every package quoting such a value (the
// settings, tracing, the import, the errors of the catalog's checks) takes
// the one rule.
package redact

import (
	"net/url"
	"strings"
	"unicode"
)

// Value is a value as a message shows it: without what comes before
// its last @, where a DSN or a URL holds its user and password. An http(s)
// URL whose last @ ends its userinfo keeps its scheme
// ("https://…@host/spec.json"): a constant, so nothing of what was cut.
func Value(v string) string {
	i := strings.LastIndex(v, "@")
	if i < 0 {
		return v
	}
	for _, scheme := range []string{"http://", "https://"} {
		if strings.HasPrefix(v, scheme) && !strings.ContainsAny(v[len(scheme):i], "/?#") {
			return scheme + "…" + v[i:]
		}
	}
	return "…" + v[i:]
}

// Location is an http(s) URL as it is stored and shown (an import's
// location, the OTLP endpoint): its userinfo (which Go's client sends as
// basic auth: a password or a token) written "…" and the rest as it is
// ("https://…@host/@scope/spec.json"), so the location shown is a URL
// naming the same document, and its own redaction; a value with userinfo
// that net/url does not parse as Value writes it (cut at its last @).
// The value of each query parameter whose name reads as a credential
// (CredentialParam: access_token, api_key, sig, …) is written "…" too,
// the rest of the query as it is ("https://host/spec.json?v=2&token=…"),
// and so is each such path parameter (a path segment's ";name=value",
// which servlet containers read: "https://host/spec.json;jsessionid=…").
// Any other location as it is.
func Location(loc string) string {
	if !isHTTP(loc) {
		return loc
	}
	// The parameters before and after: a value cut at its last @ (an
	// unparsed userinfo) may have lost the ? before a query's credential,
	// or had a # in its password, which hid the query behind it.
	return redactedParams(redactedUserinfo(redactedParams(loc)))
}

func redactedUserinfo(loc string) string {
	scheme, at := userinfoEnd(loc)
	switch {
	case at >= 0 && loc[scheme:at] == "…":
		return loc // shown already
	case at < 0 && !unparsedUserinfo(loc, scheme):
		return loc // none
	}
	if u, err := url.Parse(loc); err == nil && u.User != nil {
		return loc[:scheme] + "…" + loc[at:]
	}
	return Value(loc)
}

// unparsedUserinfo reports whether loc, an http(s) URL whose authority
// has no @, is one net/url refuses with an @ after its scheme's //: a
// password with a / ? or # written as it is ends the authority before its
// @ (`https://user:pa/ss@host/`, refused "invalid port"; review79). It is
// never fetched, and is cut at its last @ as Value does.
func unparsedUserinfo(loc string, scheme int) bool {
	if !strings.Contains(loc[scheme:], "@") {
		return false
	}
	_, err := url.Parse(loc)
	return err != nil
}

// URL is a URL as an error quotes it, parsed or not: the userinfo of its
// authority (any scheme or none, "//u:pw@host", up to the authority's
// last @) written "…", the
// rest as it is (review78: a base_url or an MCP server's url refused was
// quoted whole, a password in it). One net/url refuses with an @ after its
// // (a password with a / ? or # written as it is, which ends the
// authority before its @) is cut at its last @ (leftovers80).
func URL(raw string) string {
	start := 0
	if strings.HasPrefix(raw, "//") {
		start = 2 // a reference without a scheme: net/url reads its authority
	} else if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	if start == 0 {
		return raw
	}
	authority := raw[start:]
	if end := strings.IndexAny(authority, "/?#"); end >= 0 {
		authority = authority[:end]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		if at = strings.LastIndex(raw[start:], "@"); at < 0 {
			return raw
		}
		if _, err := url.Parse(raw); err == nil {
			return raw // an @ in its path, query or fragment
		}
	}
	return raw[:start] + "…" + raw[start+at:]
}

// redactedParams is loc with the value of each credential parameter of its
// path and query written "…".
func redactedParams(loc string) string {
	var b strings.Builder
	done := 0 // loc is written up to there
	eachCredential(loc, func(name, value string, at int) {
		if value != "…" {
			at += len(name) + 1
			b.WriteString(loc[done:at])
			b.WriteString("…")
			done = at + len(value)
		}
	})
	if done == 0 {
		return loc
	}
	b.WriteString(loc[done:])
	return b.String()
}

// eachCredential calls f with each parameter of loc's path or query that
// has a credential's name and a value, and where it starts in loc.
func eachCredential(loc string, f func(name, value string, at int)) {
	path, start, end := pathBounds(loc)
	pathEnd := end
	if start >= 0 {
		pathEnd = start - 1
	}
	for path < pathEnd {
		n := strings.IndexByte(loc[path:pathEnd], '/')
		if n < 0 {
			n = pathEnd - path
		}
		// A segment's parameters follow its first ; (RFC 3986 3.3).
		if p := strings.IndexByte(loc[path:path+n], ';'); p >= 0 {
			eachParam(loc[path+p+1:path+n], func(name, value string, at int) { f(name, value, path+p+1+at) })
		}
		path += n + 1
	}
	if start >= 0 {
		eachParam(loc[start:end], func(name, value string, at int) { f(name, value, start+at) })
	}
}

// pathBounds is where loc's path starts (its first / after the authority)
// and where its query starts (after its ?; -1 without one) and ends (its #,
// or loc's end), as net/url and Go's client take them: the query from the
// first ? before the first #. Without a path, path is where the path
// would end.
func pathBounds(loc string) (path, query, end int) {
	end = len(loc)
	if i := strings.IndexByte(loc, '#'); i >= 0 {
		end = i
	}
	query, pathEnd := -1, end
	if q := strings.IndexByte(loc[:end], '?'); q >= 0 {
		query, pathEnd = q+1, q
	}
	scheme, _ := userinfoEnd(loc)
	path = pathEnd
	if i := strings.IndexByte(loc[scheme:pathEnd], '/'); i >= 0 {
		path = scheme + i
	}
	return path, query, end
}

// eachParam calls f with each parameter of q that has a credential's
// name and a value, and where it starts in q. Parameters are split at &
// and at ; (which some servers still take as a separator in a query).
func eachParam(q string, f func(name, value string, at int)) {
	for at := 0; at <= len(q); {
		n := strings.IndexAny(q[at:], "&;")
		if n < 0 {
			n = len(q) - at
		}
		if name, value, ok := strings.Cut(q[at:at+n], "="); ok && value != "" && CredentialParam(name) {
			f(name, value, at)
		}
		at += n + 1
	}
}

// CredentialParam reports whether a query or path parameter's name reads
// as a credential: compared in lower case with its separators (- _ . and
// spaces) left out, a name that is sig, code (Azure Functions' key), auth
// or jwt, that ends in key (key, api_key, Subscription-Key), or that holds
// token, secret, passw, pwd, signature, credential or session
// (X-Amz-Signature, private_token, X-Amz-Credential, jsessionid…). A list,
// not every parameter: an import's location is a source's identity, so two
// documents told apart by a parameter that is no secret (?group=admin,
// ?version=2) stay two sources.
func CredentialParam(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	n := strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		return unicode.ToLower(r)
	}, name)
	switch n {
	case "sig", "code", "auth", "jwt":
		return true
	}
	for _, w := range []string{"token", "secret", "passw", "pwd", "signature", "credential", "session"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return strings.HasSuffix(n, "key")
}

// Credentials are what Location hides in an http(s) URL's path parameters
// and query: the value of each credential parameter, as written and, when
// it differs, decoded. A masker of messages quoting the URL takes them (an
// MCP server's url: Go's client quotes the URL a failed request went to).
func Credentials(loc string) []string {
	if !isHTTP(loc) {
		return nil
	}
	var out []string
	eachCredential(loc, func(_, value string, _ int) {
		out = append(out, value)
		if v, err := url.QueryUnescape(value); err == nil && v != value {
			out = append(out, v)
		}
	})
	return out
}

// Hides reports whether loc's redaction as a Location hides a part of it
// (userinfo, a credential parameter's value), shown or not.
func Hides(loc string) bool {
	if !isHTTP(loc) {
		return false
	}
	if scheme, at := userinfoEnd(loc); at >= 0 || unparsedUserinfo(loc, scheme) {
		return true
	}
	found := false
	eachCredential(loc, func(string, string, int) { found = true })
	return found
}

// isHTTP reports whether loc is an http(s) URL (scheme in any case).
func isHTTP(loc string) bool {
	start, _ := userinfoEnd(loc)
	return start > 0
}

// userinfoEnd is where an http(s) URL's userinfo starts (after the
// scheme's "//", any case, as net/url takes it) and where it ends: the
// last @ of its authority, where net/url and Go's client split it; at is
// -1 without one.
func userinfoEnd(loc string) (start, at int) {
	for _, scheme := range []string{"http://", "https://"} {
		if len(loc) >= len(scheme) && strings.EqualFold(loc[:len(scheme)], scheme) {
			rest := loc[len(scheme):]
			if end := strings.IndexAny(rest, "/?#"); end >= 0 {
				rest = rest[:end]
			}
			if i := strings.LastIndex(rest, "@"); i >= 0 {
				return len(scheme), len(scheme) + i
			}
			return len(scheme), -1
		}
	}
	return 0, -1
}
