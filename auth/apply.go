package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/plugins"
)

// Applied tells the executor what Apply injected.
type Applied struct {
	// Secrets are the secret credential values used and the values
	// derived from them (the basic "user:pass" pair, the oauth2 client
	// pair and form, the access token): what a Masker must hide besides
	// the credentials (see MaskerFor). Identifiers are not among them on
	// their own, only inside a pair.
	Secrets []string
	// Headers are the request header names carrying credentials, to drop
	// on a cross-origin redirect (egress.WithSensitiveHeaders).
	Headers []string
}

func (a *Applied) header(name string) {
	name = http.CanonicalHeaderKey(name)
	if !slices.Contains(a.Headers, name) {
		a.Headers = append(a.Headers, name)
	}
}

// MissingCredentialsError reports credential keys absent (or empty) from
// the credentials given. It names keys, never values.
type MissingCredentialsError struct {
	Keys []string // sorted
}

func (e *MissingCredentialsError) Error() string {
	return "missing credentials: " + strings.Join(e.Keys, ", ")
}

// ErrCredentialValue is wrapped by Apply's error for a credential value
// (or configured prefix) holding CR, LF or NUL, which could split a header
// or a query string.
var ErrCredentialValue = errors.New("value contains CR, LF or NUL")

// Authenticator applies auth configs to requests. It caches oauth2
// client-credentials tokens, so one Authenticator should serve the whole
// engine. It is safe for concurrent use.
type Authenticator struct {
	client *http.Client
	now    func() time.Time // the clock of token expiry; tests replace it

	mu     sync.Mutex
	tokens map[tokenKey]*tokenEntry
}

// NewAuthenticator returns an Authenticator that fetches oauth2 tokens
// with client, which should be the engine's egress-guarded client: a
// token_url is plugin configuration and must not reach internal addresses
// either. A nil client is a guarded one under the default policy.
func NewAuthenticator(client *http.Client) *Authenticator {
	if client == nil {
		client = egress.NewClient(&egress.Dialer{})
	}
	return &Authenticator{client: client, now: time.Now, tokens: make(map[tokenKey]*tokenEntry)}
}

// Apply injects cfg's credentials, taken from creds, into req:
//
//   - mapping entries, for every type: creds[source] (after the entry's
//     prefix) as the header, query parameter or cookie named target
//     (location defaults to header). A header or query parameter of the
//     same name is replaced; a cookie is appended to the Cookie header;
//   - bearer: "Authorization: Bearer <token>", the token key being
//     cfg.Token or, when absent, the single mapping entry's source (which
//     is then not applied as a mapping);
//   - basic: Authorization Basic of creds[username]:creds[password]; the
//     password may be empty (present, not absent), and the user name is
//     then the secret;
//   - oauth2: "Authorization: Bearer <access token>", the token either
//     creds[access_token] (grant access_token) or fetched from token_url
//     (grant client_credentials) and cached per credential set until
//     shortly before it expires.
//     With grant authorization_code Apply sets no Authorization: the
//     token is the user's connection's, which the executor sets.
//
// Credentials absent or empty yield a *MissingCredentialsError before req
// is touched; a value holding CR, LF or NUL an error wrapping
// ErrCredentialValue; a secret shorter than MinMaskLen, ErrSecretTooShort;
// a cookie value RFC 6265 forbids, ErrCookieValue.
// On error req is unchanged. Errors name credential keys, never values.
func (a *Authenticator) Apply(ctx context.Context, cfg plugins.AuthConfig, creds map[string]string, req *http.Request) (Applied, error) {
	var out Applied
	if err := checkCredentials(cfg, creds); err != nil {
		return out, err
	}
	mapping := cfg.ExtraMapping()
	if err := checkMapping(mapping, creds); err != nil {
		return out, err
	}
	var authorization string // the Authorization header value, when the type sets one
	switch cfg.Type {
	case "", plugins.AuthNone, plugins.AuthAPIKey:
	case plugins.AuthBearer:
		key := cfg.BearerKey()
		if key == "" {
			return out, errors.New("auth_config: type bearer needs token (or a single mapping entry)")
		}
		authorization = "Bearer " + creds[key]
		out.Secrets = append(out.Secrets, creds[key])
	case plugins.AuthBasic:
		user, pass := creds[cfg.Username], creds[cfg.Password]
		if strings.Contains(user, ":") {
			// RFC 7617: the user-id cannot hold a colon, the server would
			// split it there.
			return out, fmt.Errorf("credential %s: a basic-auth user name must not contain ':'", cfg.Username)
		}
		userPass := user + ":" + pass
		if pass == "" {
			// The user name alone is the secret (Stripe's key): masked as
			// one, held to a secret's length; an empty password masks
			// nothing.
			if err := CheckSecretLength(cfg.Username, user); err != nil {
				return out, err
			}
			out.Secrets = append(out.Secrets, user)
		} else {
			out.Secrets = append(out.Secrets, pass)
		}
		authorization = "Basic " + base64.StdEncoding.EncodeToString([]byte(userPass))
		out.Secrets = append(out.Secrets, userPass) // a Masker derives the base64
	case plugins.AuthOAuth2:
		o := cfg.OAuth2
		if o == nil {
			return out, errors.New("auth_config: type oauth2 needs an oauth2 object")
		}
		var token string
		switch grant := o.EffectiveGrant(); grant {
		case plugins.GrantAccessToken:
			token = creds[o.AccessToken]
		case plugins.GrantClientCredentials:
			id, secret := creds[o.ClientID], creds[o.ClientSecret]
			sent := clientCredentialsSecrets(id, secret)
			var err error
			if token, err = a.clientCredentialsToken(ctx, o, id, secret); err != nil {
				// A token endpoint may echo what it was sent.
				return Applied{}, NewMasker(sent...).Error(err)
			}
			out.Secrets = append(out.Secrets, sent...)
		case plugins.GrantAuthorizationCode:
			// The user's connection holds the token: the executor takes it
			// from package connections and sets it itself.
		default:
			return out, fmt.Errorf("auth_config.oauth2: unknown grant %q", grant)
		}
		if token != "" {
			authorization = "Bearer " + token
			out.Secrets = append(out.Secrets, token)
		}
	default:
		return out, fmt.Errorf("auth_config: unknown type %q", cfg.Type)
	}
	for _, m := range mapping {
		v := creds[m.Source]
		if m.IsSecret() {
			out.Secrets = append(out.Secrets, v)
		}
		applyMapping(req, m, m.Prefix+v, &out)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
		out.header("Authorization")
	}
	return out, nil
}

// clientCredentialsSecrets is what a token request carries of the client
// secret, with the client id where the two travel together:
// golang.org/x/oauth2 sends Basic base64(escape(id):escape(secret)), or
// the form client_id=…&client_secret=… (url.Values sorts the keys).
func clientCredentialsSecrets(id, secret string) []string {
	qid, qsecret := url.QueryEscape(id), url.QueryEscape(secret)
	return []string{secret, id + ":" + secret, qid + ":" + qsecret, "client_id=" + qid + "&client_secret=" + qsecret}
}

// checkCredentials fails on keys cfg reads that creds lacks, then on
// values that could break out of a header or query string, then on
// secrets too short to mask.
func checkCredentials(cfg plugins.AuthConfig, creds map[string]string) error {
	var buf [4]string
	keys := cfg.CredentialKeysIn(buf[:])
	var missing []string
	for _, k := range keys {
		if v, ok := creds[k]; v == "" && !(ok && cfg.MayBeEmpty(k)) {
			missing = append(missing, k)
		}
	}
	if missing != nil {
		return &MissingCredentialsError{Keys: missing} // sorted, as keys are
	}
	for _, k := range keys {
		if strings.ContainsAny(creds[k], "\r\n\x00") {
			return fmt.Errorf("credential %s: %w", k, ErrCredentialValue)
		}
	}
	return CheckSecretLengths(cfg.IdentifierKeys(), creds)
}

// checkMapping validates entries before any is applied, so that a bad one
// leaves the request untouched.
func checkMapping(mapping []plugins.AuthMapping, creds map[string]string) error {
	for i, m := range mapping {
		switch m.Location {
		case "", plugins.InHeader, plugins.InCookie:
			if !isToken(m.Target) {
				return fmt.Errorf("auth_config.mapping[%d]: target %q is not a valid %s name", i, m.Target, locationOf(m))
			}
		case plugins.InQuery:
			if m.Target == "" {
				return fmt.Errorf("auth_config.mapping[%d]: target is required", i)
			}
		default:
			return fmt.Errorf("auth_config.mapping[%d]: location %q is not header, query or cookie", i, m.Location)
		}
		if strings.ContainsAny(m.Prefix, "\r\n\x00") {
			return fmt.Errorf("auth_config.mapping[%d].prefix: %w", i, ErrCredentialValue)
		}
		if m.Location == plugins.InCookie && !validCookieValue(m.Prefix+creds[m.Source]) {
			return fmt.Errorf("credential %s: %w", m.Source, ErrCookieValue)
		}
	}
	return nil
}

func locationOf(m plugins.AuthMapping) string {
	if m.Location == "" {
		return plugins.InHeader
	}
	return m.Location
}

func applyMapping(req *http.Request, m plugins.AuthMapping, value string, out *Applied) {
	switch locationOf(m) {
	case plugins.InHeader:
		req.Header.Set(m.Target, value)
		out.header(m.Target)
	case plugins.InQuery:
		req.URL.RawQuery = setQuery(req.URL.RawQuery, m.Target, value)
	case plugins.InCookie:
		req.Header.Set("Cookie", setCookie(req.Header.Get("Cookie"), m.Target, cookieValue(value)))
		out.header("Cookie")
	}
}

// setCookie returns a Cookie header with every cookie named name removed
// and name=value appended, as setQuery does for a query: an argument
// placed in a cookie of the credential's name would otherwise come first,
// and servers read the first of two cookies of one name.
func setCookie(header, name, value string) string {
	var b strings.Builder
	for pair := range strings.SplitSeq(header, ";") {
		pair = strings.TrimSpace(pair)
		if k, _, _ := strings.Cut(pair, "="); pair == "" || strings.TrimSpace(k) == name {
			continue
		}
		b.WriteString(pair)
		b.WriteString("; ")
	}
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(value)
	return b.String()
}

// setQuery returns rawQuery with every parameter named key removed and
// key=value appended, both escaped. The other parameters keep their
// order and encoding byte for byte (url.Values.Encode would sort and
// re-escape them, undoing the executor's style/explode serialization).
func setQuery(rawQuery, key, value string) string {
	var b strings.Builder
	b.Grow(len(rawQuery) + len(key) + len(value) + 8)
	for pair := range strings.SplitSeq(rawQuery, "&") {
		if pair == "" {
			continue
		}
		k, _, _ := strings.Cut(pair, "=")
		if uk, err := url.QueryUnescape(k); err == nil && uk == key || k == key {
			continue
		}
		b.WriteString(pair)
		b.WriteByte('&')
	}
	b.WriteString(url.QueryEscape(key))
	b.WriteByte('=')
	b.WriteString(url.QueryEscape(value))
	return b.String()
}

// ErrCookieValue is wrapped by Apply's error for a credential mapped to a
// cookie whose value holds a byte RFC 6265 forbids there (a control
// character, '"', ';', a backslash or non-ASCII). net/http would silently drop
// the byte and log it, part of a secret in a log.
var ErrCookieValue = errors.New("value cannot be sent in a cookie")

func validCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// cookieValue quotes v when it holds a space or a comma, as net/http does.
func cookieValue(v string) string {
	if strings.ContainsAny(v, " ,") {
		return `"` + v + `"`
	}
	return v
}

// isToken reports whether s is an RFC 7230 token: a valid header or
// cookie name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
