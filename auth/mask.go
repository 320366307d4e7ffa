package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// MinMaskLen is the shortest secret a Masker masks: a shorter one (a PIN,
// a "1") would redact random fragments of every response while hiding
// next to nothing.
const MinMaskLen = 4

// Redacted replaces every masked secret.
const Redacted = "[REDACTED]"

// Masker replaces secrets in text that the LLM, logs, errors or execution
// records will see. It masks each secret as given and in the forms it
// takes on the wire or in echoes: query-escaped, path-escaped, base64
// (standard and URL alphabets, padded or not) and JSON-escaped. A nil
// *Masker masks nothing. It is safe for concurrent use.
type Masker struct {
	needles []string // every form, longest first
	// scan is needles without those containing another (padded base64
	// contains unpadded): text holding none of scan holds no needle.
	scan []string

	once     sync.Once
	replacer *strings.Replacer // built on the first text that needs it
}

// NewMasker returns a Masker for secrets; those shorter than MinMaskLen
// are ignored. Building one is cheap: scanning text that holds no secret
// allocates nothing.
func NewMasker(secrets ...string) *Masker {
	m := &Masker{}
	add := func(s string) {
		if len(s) >= MinMaskLen && !slices.Contains(m.needles, s) {
			m.needles = append(m.needles, s)
		}
	}
	for _, s := range secrets {
		if len(s) < MinMaskLen {
			continue
		}
		add(s)
		add(url.QueryEscape(s)) // both return s, unallocated, when nothing needs escaping
		add(url.PathEscape(s))
		// Unpadded forms are substrings of padded ones; the URL alphabet
		// differs only where the standard one has '+' or '/'.
		std := base64.StdEncoding.EncodeToString([]byte(s))
		add(std)
		add(strings.TrimRight(std, "="))
		if strings.ContainsAny(std, "+/") {
			u := base64.URLEncoding.EncodeToString([]byte(s))
			add(u)
			add(strings.TrimRight(u, "="))
		}
		if strings.ContainsFunc(s, needsJSONEscape) {
			add(jsonEscape(s, true))
			add(jsonEscape(s, false))
		}
	}
	// Longest first: the replacer tries candidates in order, so a form
	// containing another (the padded base64 of the raw one) must win.
	slices.SortStableFunc(m.needles, func(a, b string) int { return len(b) - len(a) })
	for i, n := range m.needles {
		if !slices.ContainsFunc(m.needles[i+1:], func(shorter string) bool { return strings.Contains(n, shorter) }) {
			m.scan = append(m.scan, n)
		}
	}
	return m
}

// needsJSONEscape reports whether encoding/json may write r otherwise than
// as itself inside a string.
func needsJSONEscape(r rune) bool {
	return r < 0x20 || r == '"' || r == '\\' || r == '<' || r == '>' || r == '&' ||
		r == '\u2028' || r == '\u2029' || r == utf8.RuneError
}

// jsonEscape is s as it appears inside a JSON string, with or without
// encoding/json's HTML escaping of <, > and &.
func jsonEscape(s string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s) // a string always encodes
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return string(b[1 : len(b)-1])
}

func (m *Masker) replace(s string) string {
	m.once.Do(func() {
		pairs := make([]string, 0, 2*len(m.needles))
		for _, n := range m.needles {
			pairs = append(pairs, n, Redacted)
		}
		m.replacer = strings.NewReplacer(pairs...)
	})
	return m.replacer.Replace(s)
}

// String returns s with every secret replaced by Redacted.
func (m *Masker) String(s string) string {
	if m == nil {
		return s
	}
	for _, n := range m.scan {
		if strings.Contains(s, n) {
			return m.replace(s)
		}
	}
	return s
}

// Bytes returns b with every secret replaced by Redacted: b itself when it
// holds none, a new slice otherwise.
func (m *Masker) Bytes(b []byte) []byte {
	if m == nil {
		return b
	}
	for _, n := range m.scan {
		if bytes.Contains(b, []byte(n)) {
			return []byte(m.replace(string(b)))
		}
	}
	return b
}

// Error returns err, or when its message holds a secret (a *url.Error
// quoting a URL with ?key=SECRET), an error with the masked message.
// Unwrap still yields the original so that callers can classify it with
// errors.Is and errors.As; only print the masked Error().
func (m *Masker) Error(err error) error {
	if err == nil || m == nil {
		return err
	}
	msg := err.Error()
	masked := m.String(msg)
	if masked == msg {
		return err
	}
	return &maskedError{msg: masked, err: err}
}

type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }
