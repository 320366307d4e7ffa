// Package settings reads blindexec's BLINDEXEC_* settings strictly: from
// the process environment first, then from the env file (see Load). A value
// that does not parse is never replaced by a default: it is an error naming
// the variable, where it was set and what it accepts, so that a typo stops
// the program instead of silently changing what it does.
package settings

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"unicode"
)

// EnvFileVar names the variable that points at the env file.
const EnvFileVar = "BLINDEXEC_ENV_FILE"

// DefaultEnvFile is the env file read from the working directory when
// BLINDEXEC_ENV_FILE is not set.
const DefaultEnvFile = "blindexec.env"

// Error is a setting whose value does not parse.
type Error struct {
	Name   string // the variable, e.g. BLINDEXEC_NO_MIGRATE
	Value  string
	Origin string // "the environment" or "blindexec.env:3"
	Want   string // what the variable accepts
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s=%q (from %s): want %s", e.Name, Redacted(e.Value), e.Origin, e.Want)
}

// Redacted is a value as a message shows it: without what comes before
// its last @, where a DSN or a URL holds its user and password. An http(s)
// URL whose last @ ends its userinfo keeps its scheme
// ("https://…@host/spec.json"): a constant, so nothing of what was cut.
func Redacted(v string) string {
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

// RedactedLocation is an import's location as it is stored and shown: an
// http(s) URL with userinfo (which Go's client sends as basic auth: a
// password or a token) with its userinfo written "…" and the rest as it
// is ("https://…@host/@scope/spec.json"), so the location shown is a URL
// naming the same document, and its own redaction; a value with userinfo
// that net/url does not parse as Redacted writes it (cut at its last @).
// The value of each query parameter whose name reads as a credential
// (CredentialParam: access_token, api_key, sig, …) is written "…" too,
// the rest of the query as it is ("https://host/spec.json?v=2&token=…").
// Any other location as it is.
func RedactedLocation(loc string) string {
	if !isHTTP(loc) {
		return loc
	}
	return redactedQuery(redactedUserinfo(loc))
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
	return Redacted(loc)
}

// unparsedUserinfo reports whether loc, an http(s) URL whose authority
// has no @, is one net/url refuses with an @ after its scheme's //: a
// password with a / ? or # written as it is ends the authority before its
// @ (`https://user:pa/ss@host/`, refused "invalid port"; review79). It is
// never fetched, and is cut at its last @ as Redacted does.
func unparsedUserinfo(loc string, scheme int) bool {
	if !strings.Contains(loc[scheme:], "@") {
		return false
	}
	_, err := url.Parse(loc)
	return err != nil
}

// RedactedURL is a URL as an error quotes it, parsed or not: the
// userinfo of its authority (any scheme, up to the authority's last @)
// written "…", the rest as it is (review78: a base_url or an MCP server's
// url refused was quoted whole, a password in it).
func RedactedURL(raw string) string {
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	authority := raw[start:]
	if end := strings.IndexAny(authority, "/?#"); end >= 0 {
		authority = authority[:end]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 || start == 0 {
		return raw
	}
	return raw[:start] + "…" + raw[start+at:]
}

// redactedQuery is loc with the value of each credential parameter of its
// query written "…".
func redactedQuery(loc string) string {
	start, end := queryBounds(loc)
	if start < 0 {
		return loc
	}
	var b strings.Builder
	done := 0 // loc is written up to there
	eachParam(loc[start:end], func(name, value string, at int) {
		if value != "…" {
			at += start + len(name) + 1
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

// queryBounds is where loc's query starts (after its ?) and ends (its #,
// or loc's end), as net/url and Go's client take it: from the first ?
// before the first #; start is -1 without one.
func queryBounds(loc string) (start, end int) {
	end = len(loc)
	if i := strings.IndexByte(loc, '#'); i >= 0 {
		end = i
	}
	q := strings.IndexByte(loc[:end], '?')
	if q < 0 {
		return -1, end
	}
	return q + 1, end
}

// eachParam calls f with each parameter of query q that has a credential's
// name and a value, and where it starts in q. Parameters are split at &
// and at ; (which some servers still take as a separator).
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

// CredentialParam reports whether a query parameter's name reads as a
// credential: compared in lower case with its separators (- _ . and
// spaces) left out, a name that is sig, code (Azure Functions' key), auth
// or jwt, that ends in key (key, api_key, Subscription-Key), or that holds
// token, secret, passw, pwd, signature, credential or session
// (X-Amz-Signature, private_token, X-Amz-Credential…). A list, not every parameter:
// the location is a source's identity, so two documents told apart by a
// parameter that is no secret (?group=admin, ?version=2) stay two sources.
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

// QueryCredentials are what RedactedLocation hides in an http(s) URL's
// query: the value of each credential parameter, as written and, when it
// differs, decoded. A masker of messages quoting the URL takes them (an
// MCP server's url: Go's client quotes the URL a failed request went to).
func QueryCredentials(loc string) []string {
	start, end := queryBounds(loc)
	if !isHTTP(loc) || start < 0 {
		return nil
	}
	var out []string
	eachParam(loc[start:end], func(_, value string, _ int) {
		out = append(out, value)
		if v, err := url.QueryUnescape(value); err == nil && v != value {
			out = append(out, v)
		}
	})
	return out
}

// Redacts reports whether loc's redaction as an import location hides a
// part of it (userinfo, a credential parameter's value), shown or not.
func Redacts(loc string) bool {
	if !isHTTP(loc) {
		return false
	}
	if scheme, at := userinfoEnd(loc); at >= 0 || unparsedUserinfo(loc, scheme) {
		return true
	}
	found := false
	if start, end := queryBounds(loc); start >= 0 {
		eachParam(loc[start:end], func(string, string, int) { found = true })
	}
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

// Source is where settings come from. Read every setting through its
// methods, then check Err once: it joins every bad value.
type Source struct {
	lookup func(string) (string, bool)
	file   *envFile // nil: no env file
	errs   []error
}

// Load reads the settings of a process whose environment lookup is given
// (os.LookupEnv). The env file is the one BLINDEXEC_ENV_FILE names, else
// blindexec.env in the working directory when there is one. The
// environment wins over the file: a variable set in both takes the
// environment's value. A named file that does not exist is a bad setting
// (in Err), so that `blindexec init` can still create it; a file that
// exists but does not parse is an error.
func Load(lookup func(string) (string, bool)) (*Source, error) {
	s := &Source{lookup: lookup}
	path, named := EnvFilePath(lookup)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist) && !named:
		return s, nil
	case errors.Is(err, os.ErrNotExist):
		s.fail(EnvFileVar, path, "the environment", "an existing env file (`blindexec init` creates one)")
		return s, nil
	default:
		return nil, fmt.Errorf("%s: %w", EnvFileVar, err)
	}
	f, err := parseEnvFile(path, data)
	if err != nil {
		return nil, err
	}
	s.file = f
	return s, nil
}

// EnvFilePath is the env file of a process whose environment lookup is
// given: BLINDEXEC_ENV_FILE (named is then true), else blindexec.env.
func EnvFilePath(lookup func(string) (string, bool)) (path string, named bool) {
	if p, ok := lookup(EnvFileVar); ok && p != "" {
		return p, true
	}
	return DefaultEnvFile, false
}

// FromEnv is a Source over the environment only, without an env file
// (tests, and programs that have none).
func FromEnv(lookup func(string) (string, bool)) *Source {
	return &Source{lookup: lookup}
}

// EnvFile is the path of the env file read, or "" when none was.
func (s *Source) EnvFile() string {
	if s.file == nil {
		return ""
	}
	return s.file.path
}

// Err joins the errors of every bad value read so far, or is nil.
func (s *Source) Err() error { return errors.Join(s.errs...) }

// Errs are the errors Err joins, each an *Error.
func (s *Source) Errs() []error { return s.errs }

// raw is the value of name and where it came from; an empty value counts
// as unset (as compose files write ${X:-}).
func (s *Source) raw(name string) (value, origin string, ok bool) {
	if v, ok := s.lookup(name); ok && v != "" {
		return v, "the environment", true
	}
	if s.file != nil {
		if e, ok := s.file.vars[name]; ok && e.value != "" {
			return e.value, fmt.Sprintf("%s:%d", s.file.path, e.line), true
		}
	}
	return "", "", false
}

// Invalid reports name's value as bad: want says what it accepts.
func (s *Source) Invalid(name, want string) {
	v, origin, _ := s.raw(name)
	s.fail(name, v, origin, want)
}

// Origin says where name was set: "the environment", "FILE:LINE", or ""
// when it is not set (or s is nil).
func (s *Source) Origin(name string) string {
	if s == nil {
		return ""
	}
	_, origin, _ := s.raw(name)
	return origin
}

func (s *Source) fail(name, value, origin, want string) {
	s.errs = append(s.errs, &Error{Name: name, Value: value, Origin: origin, Want: want})
}
