package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/blindexec/blindexec/plugins"
)

// wholeBody is the wire name of a body argument that is the whole body
// ({"in": "body", "name": "$"}): an array root, a primitive, a raw text.
const wholeBody = "$"

// Header values of every request (buildRequest).
var (
	userAgentValue      = []string{"blindexec"}
	acceptEncodingValue = []string{"gzip, deflate"}
)

// outbound is a request built from a call, before auth. Sending consumes
// it (auth writes into its headers): each attempt builds its own.
type outbound struct {
	method string
	url    string
	header http.Header
	body   []byte // nil: no body
	origin string // scheme://host[:port] of base_url: where it must go
}

// newRequest makes the *http.Request, checking that the URL, parsed as
// net/http will use it, still points at base_url's scheme, host and port.
func (o *outbound) newRequest(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	if o.body != nil {
		body = bytes.NewReader(o.body)
	}
	req, err := http.NewRequestWithContext(ctx, o.method, o.url, body)
	if err != nil {
		return nil, refuse(CodeInvalidArguments, "invalid arguments: the URL cannot be built: %v", innermost(err))
	}
	scheme, host, _ := strings.Cut(o.origin, "://")
	if req.URL.Scheme != strings.ToLower(scheme) || req.URL.Host != host || req.URL.User != nil {
		return nil, refuse(CodeInvalidArguments, "invalid arguments: the arguments would change the API's address")
	}
	req.Header = o.header
	return req, nil
}

// bodyField is one argument placed in the body.
type bodyField struct {
	wire  string
	value any
	place plugins.ArgPlacement
	prop  propInfo
}

// buildRequest builds the request of a call from the plugin's execution
// config and the prepared arguments. Every value that comes from the
// arguments is escaped for where it goes, so that no argument can change
// the scheme, host or port, add a path segment or a header; errors are
// refusals (nothing has been sent).
func buildRequest(p *plugins.Plugin, args map[string]any, schema *schemaInfo) (*outbound, error) {
	e := &p.Execution
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	slices.Sort(names) // a deterministic wire order

	o := &outbound{method: strings.ToUpper(e.Method), header: make(http.Header, len(e.Headers)+4)}
	for k, v := range e.Headers {
		o.header.Set(k, v)
	}
	var (
		path    map[string]string
		query   strings.Builder
		cookies []string
		body    []bodyField
	)
	if len(e.Query) > 0 {
		for k, v := range sortedMap(e.Query) {
			appendQuery(&query, escapeQuery(k), escapeQuery(v))
		}
	}
	if err := checkExplodedKeys(p, names, args); err != nil {
		return nil, err
	}
	for _, name := range names {
		v := args[name]
		place := e.PlacementOf(name)
		if place.ContentType != "" && place.In != plugins.InBody && v != nil {
			// A parameter given as content (OpenAPI's content, not
			// style): its media type's text, which its location then
			// escapes as one string.
			if mediaType(place.ContentType) != "application/json" {
				v = scalar(v)
			} else if b, err := marshalJSON(v); err != nil {
				return nil, err
			} else {
				v = string(b)
			}
		}
		wire := wireName(e, name, place)
		switch place.In {
		case plugins.InPath:
			s, err := pathValue(name, v, place)
			if err != nil {
				return nil, err
			}
			if path == nil {
				path = make(map[string]string, 2)
			}
			path[wire] = s
		case plugins.InQuery:
			if v != nil {
				serializeQuery(&query, wire, v, place, escapeQuery)
			}
		case plugins.InHeader:
			if v == nil {
				continue
			}
			if !validHeaderName(wire) {
				return nil, refuse(CodeInvalidArguments, "invalid arguments: %s: %q is not a valid header name", name, wire)
			}
			s := simpleStyle(v, explode(place, false), false)
			if i := strings.IndexFunc(s, isCTL); i >= 0 {
				return nil, refuse(CodeInvalidArguments, "invalid arguments: %s must not contain control characters (CR, LF, NUL...), as it goes in a header: found %q", name, s[i])
			}
			if strings.Trim(s, " \t") != s {
				// A server reads a header's value without them: the
				// argument would arrive changed.
				return nil, refuse(CodeInvalidArguments, "invalid arguments: %s must not begin or end with a space or tab, as it goes in a header (the server would read it without them)", name)
			}
			o.header.Set(wire, s)
		case plugins.InCookie:
			if v == nil {
				continue
			}
			if !validHeaderName(wire) {
				return nil, refuse(CodeInvalidArguments, "invalid arguments: %s: %q is not a valid cookie name", name, wire)
			}
			cookies = append(cookies, wire+"="+simpleStyle(v, false, true))
		case plugins.InBody:
			body = append(body, bodyField{wire: wire, value: v, place: place, prop: schema.props[name]})
		default:
			return nil, refuse(CodeInvalidPlugin, "the tool %s places %s in %q, which is not a location", p.Name, name, place.In)
		}
	}
	if len(cookies) > 0 {
		if c := o.header.Get("Cookie"); c != "" {
			cookies = append([]string{c}, cookies...)
		}
		o.header.Set("Cookie", strings.Join(cookies, "; "))
	}

	u, err := buildURL(e.BaseURL, path, query.String())
	if err != nil {
		return nil, err
	}
	o.url = u
	o.origin = origin(e.BaseURL)
	if len(body) > 0 {
		ct := e.ContentType
		if ct == "" {
			ct = "application/json"
		}
		b, ct, err := encodeBody(ct, body)
		if err != nil {
			return nil, err
		}
		o.body = b
		o.header.Set("Content-Type", ct)
	}
	// The constant values are shared slices, not Set's one a call each:
	// headers are replaced or read, never written into.
	if o.header.Get("User-Agent") == "" {
		o.header["User-Agent"] = userAgentValue
	}
	// Compression is negotiated here, not by the transport, so that the
	// read cap applies to decoded bytes (see readBody).
	o.header["Accept-Encoding"] = acceptEncodingValue
	return o, nil
}

// wireName is the name an argument is sent under: its placement's name,
// except that a path argument keeps its own when base_url holds {name}
// (PlacementOf put it there for that reason).
func wireName(e *plugins.Execution, name string, place plugins.ArgPlacement) string {
	if place.Name != "" && (place.In != plugins.InPath || !strings.Contains(e.BaseURL, "{"+name+"}")) {
		return place.Name
	}
	return name
}

// checkExplodedKeys refuses an object argument sent exploded in form style
// (OpenAPI's default for a query object, RFC 6570 {?x*}: each key a
// parameter of its own, the argument's name dropped), or a form body's
// whole object, when one of its keys names a parameter of the same query
// string or form body that the argument does not own: another argument (a
// fixed one included), the plugin's own query, the API key's query
// parameter, or a key of another such object. The value would set or
// shadow it: a value escaping its parameter. The names the tool sets
// itself (its query, the API key's) are owned in the form body too, since
// PHP's $_REQUEST, Laravel's input() and Rack's params read a form body's
// field over the query's of its name; and names are compared as servers
// read them (paramKey).
func checkExplodedKeys(p *plugins.Plugin, names []string, args map[string]any) error {
	e := &p.Execution
	ct := mediaType(e.ContentType)
	form, multipart := ct == "application/x-www-form-urlencoded", ct == "multipart/form-data"
	type scope struct{ in, name string }
	// inScope is where name is sent, its wire name, and whether it is an
	// exploded object; ok is false outside the query and the body.
	inScope := func(name string) (in, wire string, isExploded, ok bool) {
		place := e.PlacementOf(name)
		in = place.In
		if in != plugins.InQuery && in != plugins.InBody {
			return "", "", false, false
		}
		// A body field is sent by style only in a form or multipart body
		// with an encoding (encodeBody); a parameter given as content is
		// its media type's text, one value.
		styled := place.ContentType == "" && (in == plugins.InQuery || (place.Style != "" || place.Explode != nil) && (form || multipart))
		wire = wireName(e, name, place)
		_, isObj := args[name].(map[string]any)
		isExploded = isObj && (styled && (place.Style == "" || place.Style == "form") && explode(place, true) ||
			in == plugins.InBody && wire == wholeBody && form)
		return in, wire, isExploded, true
	}
	// Most calls send no exploded object: they build nothing more.
	var exploded map[string]string // argument -> its scope
	for _, name := range names {
		if in, _, isExploded, ok := inScope(name); ok && isExploded {
			if exploded == nil {
				exploded = map[string]string{}
			}
			exploded[name] = in
		}
	}
	if len(exploded) == 0 {
		return nil
	}
	owned := map[scope]string{} // parameter name (paramKey) -> the argument (or "") that sends it
	for _, name := range names {
		if in, wire, isExploded, ok := inScope(name); ok && !isExploded {
			owned[scope{in, paramKey(wire)}] = name
		}
	}
	toolSets := func(k string) {
		owned[scope{plugins.InQuery, paramKey(k)}] = ""
		owned[scope{plugins.InBody, paramKey(k)}] = ""
	}
	for k := range e.Query {
		toolSets(k)
	}
	for _, m := range p.AuthConfig.Mapping {
		if m.Location == plugins.InQuery {
			toolSets(m.Target)
		}
	}
	for _, name := range names {
		in, ok := exploded[name]
		if !ok {
			continue
		}
		for k := range sortedMap(args[name].(map[string]any)) {
			base, _, _ := strings.Cut(k, "[") // deepObject and bracket names: base[...]
			other, taken := owned[scope{in, paramKey(k)}]
			if !taken {
				other, taken = owned[scope{in, paramKey(base)}]
			}
			if taken && other != name {
				// Neither the key (part of the value) nor a parameter the
				// tool sets (the API key's) is named.
				return refuse(CodeInvalidArguments, "invalid arguments: %s: each of its keys is sent as a parameter of its own, and one of them is a parameter that %s", name, ownerOf(other))
			}
			owned[scope{in, paramKey(k)}] = name
		}
	}
	return nil
}

// paramKey is a query or form name as the laxest common servers read it:
// ASP.NET in any case; PHP up to a NUL, without leading spaces, and with
// '.', ' ' and an unmatched '[' as '_'. Two names with one key are one
// parameter to some server.
func paramKey(name string) string {
	name, _, _ = strings.Cut(name, "\x00")
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', ' ', '[':
			return '_'
		}
		return unicode.ToLower(r)
	}, strings.TrimLeft(name, " "))
}

func ownerOf(arg string) string {
	if arg == "" {
		return "the tool sets itself"
	}
	return "the argument " + arg + " sends"
}

// buildURL fills base_url's templates, each value escaped as exactly one
// path segment, and appends the query.
func buildURL(base string, path map[string]string, query string) (string, error) {
	var b strings.Builder
	b.Grow(len(base) + len(query) + 16)
	for s := base; ; {
		i := strings.IndexByte(s, '{')
		j := strings.IndexByte(s[max(i, 0):], '}')
		if i < 0 || j < 0 {
			b.WriteString(s)
			break
		}
		name := s[i+1 : i+j]
		v, ok := path[name]
		if !ok {
			return "", refuse(CodeInvalidArguments, "invalid arguments: %s is required (it fills the URL path)", name)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+1:]
	}
	if query != "" {
		if strings.Contains(base, "?") {
			b.WriteByte('&')
		} else {
			b.WriteByte('?')
		}
		b.WriteString(query)
	}
	u := b.String()
	if hasDotSegment(u[len(origin(base)):]) {
		return "", refuse(CodeInvalidArguments, "invalid arguments: the arguments would change the URL path")
	}
	return u, nil
}

// hasDotSegment reports a "." or ".." segment in the path of a
// path[?query] string: a server would resolve it to another path.
func hasDotSegment(path string) bool {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// origin is scheme://host[:port] of a base_url, where plugins.Validate
// allows no template.
func origin(base string) string {
	i := strings.Index(base, "://")
	if i < 0 {
		return base
	}
	if j := strings.IndexAny(base[i+3:], "/?#"); j >= 0 {
		return base[:i+3+j]
	}
	return base
}

// pathValue serializes a path argument (OpenAPI style simple, label or
// matrix) with each value escaped so that it stays inside one segment.
func pathValue(name string, v any, place plugins.ArgPlacement) (string, error) {
	if v == nil {
		return "", refuse(CodeInvalidArguments, "invalid arguments: %s is required (it fills the URL path)", name)
	}
	if pathValues(v, hasDotSegmentValue) {
		return "", refuse(CodeInvalidArguments, "invalid arguments: %s: a path value must not be or hold a . or .. segment, in any encoding (a server may resolve it as a parent path)", name)
	}
	ex := explode(place, false)
	var s string
	switch place.Style {
	case "label":
		sep := ","
		if ex {
			sep = "."
		}
		s = "." + joinValues(v, sep, ex, escapeSegment)
	case "matrix":
		s = matrixValue(name, v, ex)
	default:
		s = joinValues(v, ",", ex, escapeSegment)
	}
	if s == "" {
		return "", refuse(CodeInvalidArguments, "invalid arguments: %s must not be empty (it fills a URL path segment)", name)
	}
	return s, nil
}

// pathValues reports whether f holds for one of the strings a path value
// is serialized from: the value, an array's items, an object's keys and
// values.
func pathValues(v any, f func(string) bool) bool {
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			if f(scalar(x)) {
				return true
			}
		}
		return false
	case map[string]any:
		for k, x := range t {
			if f(k) || f(scalar(x)) {
				return true
			}
		}
		return false
	}
	return f(scalar(v))
}

// hasDotSegmentValue reports whether s is, or holds between slashes or
// backslashes, a "." or ".." segment once decoded the ways a server or a
// proxy in front of it may decode: percent-encoding (repeatedly, %u
// included), full-width and one-dot-leader dots, overlong UTF-8, and
// Tomcat's ";params" ("..;" is ".."). Escaping alone (%2E%2E) is not
// enough: some servers resolve the encoded form as a parent segment.
func hasDotSegmentValue(s string) bool {
	if !strings.ContainsAny(s, ".%\uff0e\u2024") && strings.IndexByte(s, 0xae) < 0 { // 0xae ends the overlong dots
		return false
	}
	for range 4 {
		d := dotReplacer.Replace(percentDecode(s))
		if d == s {
			break
		}
		s = d
	}
	for seg := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		seg, _, _ = strings.Cut(seg, ";")
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

var dotReplacer = strings.NewReplacer("\uff0e", ".", "\u2024", ".", "\xc0\xae", ".", "\xe0\x80\xae", ".")

// percentDecode decodes %XX and %uXXXX escapes, leaving malformed ones as
// they are.
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
				i += 2
				continue
			}
			if i+5 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
				r := rune(unhex(s[i+2]))<<12 | rune(unhex(s[i+3]))<<8 | rune(unhex(s[i+4]))<<4 | rune(unhex(s[i+5]))
				b.WriteRune(r)
				i += 5
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// matrixValue is RFC 6570's path-style expansion ({;x}, {;x*}, §3.2.7):
// ";name=value", or ";name" alone when the value is empty.
func matrixValue(name string, v any, ex bool) string {
	key := ";" + escapeSegment(name)
	pair := func(k, val string) string {
		if val == "" {
			return k
		}
		return k + "=" + val
	}
	switch t := v.(type) {
	case []any:
		if ex {
			var b strings.Builder
			for _, x := range t {
				b.WriteString(pair(key, escapeSegment(scalar(x))))
			}
			return b.String()
		}
	case map[string]any:
		if ex {
			var b strings.Builder
			for k, x := range sortedMap(t) {
				b.WriteString(pair(";"+escapeSegment(k), escapeSegment(scalar(x))))
			}
			return b.String()
		}
	}
	return pair(key, joinValues(v, ",", false, escapeSegment))
}

// joinValues serializes a value as OpenAPI's simple style does: arrays
// comma-joined, objects as k,v,k2,v2 (or k=v,k2=v2 exploded), each item
// escaped with esc (delimiters are not).
func joinValues(v any, sep string, ex bool, esc func(string) string) string {
	switch t := v.(type) {
	case []any:
		parts := make([]string, len(t))
		for i, x := range t {
			parts[i] = esc(scalar(x))
		}
		return strings.Join(parts, sep)
	case map[string]any:
		parts := make([]string, 0, 2*len(t))
		for k, x := range sortedMap(t) {
			if ex {
				parts = append(parts, esc(k)+"="+esc(scalar(x)))
			} else {
				parts = append(parts, esc(k), esc(scalar(x)))
			}
		}
		return strings.Join(parts, sep)
	}
	return esc(scalar(v))
}

// simpleStyle serializes a header or cookie value; in cookie values what
// is not a cookie-octet is percent-escaped so that it cannot end the
// cookie, and nothing else is: most servers (Starlette, Tomcat, net/http)
// hand the value over without percent-decoding it.
func simpleStyle(v any, ex, cookie bool) string {
	esc := func(s string) string { return s }
	if cookie {
		esc = escapeCookie
	}
	return joinValues(v, ",", ex, esc)
}

// escapeCookie percent-escapes the bytes RFC 6265 keeps out of a cookie
// value (controls, space, DQUOTE, comma, semicolon, backslash, non-ASCII)
// and "%" itself.
func escapeCookie(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\",;\\%", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func explode(place plugins.ArgPlacement, def bool) bool {
	if place.Explode != nil {
		return *place.Explode
	}
	return def
}

// serializeQuery appends a query (or form body) argument per its OpenAPI
// style and explode (form with explode by default), escaping with esc.
func serializeQuery(b *strings.Builder, name string, v any, place plugins.ArgPlacement, esc func(string) string) {
	stylePairs(name, v, place, esc, func(k, v string) { appendQuery(b, k, v) })
}

// stylePairs gives the name=value pairs an argument is sent as in a query
// string, a form body or a multipart body (one part each: OpenAPI 3.1.1
// Appendix C puts the names in the parts' Content-Disposition name and the
// values in their bodies), per its OpenAPI style and explode: form with
// explode by default (RFC 6570 §3.2.8, {?x*}); spaceDelimited and
// pipeDelimited join with a space or "|"; deepObject brackets. Names and
// values are escaped with esc, delimiters not (a space is esc(" ")).
func stylePairs(name string, v any, place plugins.ArgPlacement, esc func(string) string, emit func(k, v string)) {
	key := esc(name)
	style := place.Style
	if style == "" {
		style = "form"
	}
	if style == "deepObject" {
		// OpenAPI defines deepObject for objects; Stripe's documents give
		// it to arrays too, and Stripe reads those indexed (expand[0]=x),
		// answering "Invalid array" to expand=x.
		switch v.(type) {
		case map[string]any, []any:
			flatten(key, v, esc, emit)
			return
		}
	}
	ex := explode(place, style == "form" || style == "deepObject")
	sep := ","
	switch style {
	case "spaceDelimited":
		sep = esc(" ")
	case "pipeDelimited":
		sep = "|"
	}
	switch t := v.(type) {
	case []any:
		if ex {
			for _, x := range t {
				emit(key, esc(scalar(x)))
			}
			return
		}
	case map[string]any:
		if ex {
			for k, x := range sortedMap(t) {
				emit(esc(k), esc(scalar(x)))
			}
			return
		}
	}
	emit(key, joinValues(v, sep, false, esc))
}

func appendQuery(b *strings.Builder, k, v string) {
	if b.Len() > 0 {
		b.WriteByte('&')
	}
	b.WriteString(k)
	b.WriteByte('=')
	b.WriteString(v)
}

// flatten writes nested objects and arrays as Stripe and deepObject do:
// metadata[k]=v, items[0][price]=x. Brackets stay literal; every name and
// value is escaped with esc.
func flatten(key string, v any, esc func(string) string, emit func(k, v string)) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			emit(key, "")
		}
		for k, x := range sortedMap(t) {
			flatten(key+"["+esc(k)+"]", x, esc, emit)
		}
	case []any:
		if len(t) == 0 {
			emit(key, "")
		}
		for i, x := range t {
			flatten(key+"["+strconv.Itoa(i)+"]", x, esc, emit)
		}
	default:
		emit(key, esc(scalar(v)))
	}
}

// encodeBody encodes the body arguments per the content type and returns
// the Content-Type to send.
func encodeBody(ct string, fields []bodyField) ([]byte, string, error) {
	whole := slices.IndexFunc(fields, func(f bodyField) bool { return f.wire == wholeBody })
	if whole >= 0 && len(fields) > 1 {
		return nil, "", refuse(CodeInvalidPlugin, "the tool places an argument as the whole body ($) beside other body arguments")
	}
	switch mediaType(ct) {
	case "application/json":
		var v any
		if whole >= 0 {
			v = fields[0].value
		} else {
			obj := make(map[string]any, len(fields))
			for _, f := range fields {
				obj[f.wire] = f.value
			}
			v = obj
		}
		b, err := marshalJSON(v)
		return b, ct, err
	case "application/x-www-form-urlencoded":
		var b strings.Builder
		emit := func(k, v string) { appendQuery(&b, k, v) }
		for _, f := range fields {
			if f.value == nil {
				continue // undefined (RFC 6570 §2.3): not sent, as in a query
			}
			if f.wire == wholeBody {
				if obj, ok := f.value.(map[string]any); ok {
					for k, x := range sortedMap(obj) {
						flatten(url.QueryEscape(k), x, url.QueryEscape, emit)
					}
					continue
				}
			}
			if f.place.Style != "" || f.place.Explode != nil {
				// The document said how (OpenAPI encoding): honour it.
				serializeQuery(&b, f.wire, f.value, f.place, url.QueryEscape)
				continue
			}
			flatten(url.QueryEscape(f.wire), f.value, url.QueryEscape, emit)
		}
		return []byte(b.String()), ct, nil
	case "multipart/form-data":
		return encodeMultipart(fields)
	}
	// text/plain and any other type: the argument's value as it is.
	if whole < 0 && len(fields) > 1 {
		obj := make(map[string]any, len(fields))
		for _, f := range fields {
			obj[f.wire] = f.value
		}
		b, err := marshalJSON(obj)
		return b, ct, err
	}
	b, err := fieldBytes(fields[0])
	return b, ct, err
}

// encodeMultipart writes one part per field, and one per item of a list;
// a file part is a field whose placement names a filename, or whose
// schema (or that of its items) says format: binary or base64 content. A
// file is its content as a string, or an object {content, filename,
// content_type}; its part's type is content_type, else the document's
// encoding when it names one type, else the filename's, else
// application/octet-stream. Another field whose placement names a content
// type (OpenAI's sdp as application/sdp) is a part of that type without a
// filename: with one, the servers reading the form take it for a file.
func encodeMultipart(fields []bodyField) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, f := range fields {
		if f.value == nil {
			continue // undefined (RFC 6570 §2.3): an empty part would read as ""
		}
		values, ok := f.value.([]any)
		if !ok {
			values = []any{f.value}
		}
		file := f.place.Filename != "" || f.prop.binary || f.prop.base64
		if !file && (f.place.Style != "" || f.place.Explode != nil) {
			// The document's encoding gives a style: its pairs, one part
			// each, unescaped (OpenAPI 3.1 Encoding Object; Stripe's
			// file_link_data[create]=true).
			stylePairs(f.wire, f.value, f.place, func(s string) string { return s }, func(k, v string) { w.WriteField(k, v) })
			continue
		}
		for _, v := range values {
			switch {
			case file:
				if err := writeFilePart(w, f, v); err != nil {
					return nil, "", err
				}
			case f.place.ContentType != "":
				part, _ := w.CreatePart(partHeader(f.wire, "", f.place.ContentType))
				io.WriteString(part, scalar(v))
			case isStructured(v):
				// OpenAPI's default contentType for an object (and an
				// array's, by its items) is application/json.
				part, _ := w.CreatePart(partHeader(f.wire, "", "application/json"))
				io.WriteString(part, scalar(v))
			default:
				w.WriteField(f.wire, scalar(v))
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// isStructured reports an object or an array: JSON text on the wire.
func isStructured(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

func writeFilePart(w *multipart.Writer, f bodyField, v any) error {
	filename, ctype := f.place.Filename, ""
	if obj, ok := v.(map[string]any); ok {
		if _, has := obj["content"]; has {
			if s, ok := obj["filename"].(string); ok && s != "" {
				filename = s
			}
			ctype, _ = obj["content_type"].(string)
			v = obj["content"]
		}
	}
	data, err := fieldBytes(bodyField{wire: f.wire, value: v, prop: f.prop})
	if err != nil {
		return err
	}
	if filename == "" {
		filename = f.wire
	}
	if ctype == "" {
		ctype = partType(f.place.ContentType, filename)
	}
	part, _ := w.CreatePart(partHeader(f.wire, filename, ctype))
	part.Write(data)
	return nil
}

// partHeader is a part's header: its name, its filename when it is a
// file, and its type with control characters removed.
func partHeader(name, filename, ctype string) textproto.MIMEHeader {
	disposition := fmt.Sprintf(`form-data; name="%s"`, quoteEscape(name))
	if filename != "" {
		disposition += fmt.Sprintf(`; filename="%s"`, quoteEscape(filename))
	}
	h := make(textproto.MIMEHeader, 2)
	h.Set("Content-Disposition", disposition)
	h.Set("Content-Type", strings.Map(func(r rune) rune {
		if isCTL(r) {
			return -1
		}
		return r
	}, ctype))
	return h
}

// partType is a file part's content type: the document's encoding when it
// names one concrete type, else the type the filename's extension gives,
// else application/octet-stream.
func partType(declared, filename string) string {
	if declared != "" && !strings.ContainsAny(declared, ",*") {
		return declared
	}
	if t := mime.TypeByExtension(path.Ext(filename)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// fieldBytes is the raw content of a field: a string as it is (decoded
// when the schema says it is base64), anything else as JSON.
func fieldBytes(f bodyField) ([]byte, error) {
	s, ok := f.value.(string)
	if !ok {
		return marshalJSON(f.value)
	}
	if !f.prop.base64 {
		return []byte(s), nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(strings.TrimSpace(s)); err == nil {
			return b, nil
		}
	}
	return nil, refuse(CodeInvalidArguments, "invalid arguments: %s must be base64 (it is a file's content)", f.wire)
}

var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// quoteEscape writes s for a quoted name or filename of a part's header:
// quotes and backslashes escaped, control characters percent-encoded as
// browsers encode CR and LF (a control character left there makes the
// whole body unreadable to servers: Go's reader refuses the line).
func quoteEscape(s string) string {
	s = quoteEscaper.Replace(s)
	if strings.IndexFunc(s, isCTL) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if isCTL(rune(s[i])) {
			fmt.Fprintf(&b, "%%%02X", s[i])
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mediaType is the lower-case type/subtype of a content type, with +json
// types folded into application/json.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.ToLower(strings.TrimSpace(ct))
	if strings.HasSuffix(ct, "+json") || strings.HasSuffix(ct, "/json") {
		return "application/json"
	}
	return ct
}

func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, refuse(CodeInvalidArguments, "invalid arguments: %v", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// scalar is the text of a value on the wire: strings as they are, numbers
// as written, objects and arrays as JSON.
func scalar(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case bool:
		return strconv.FormatBool(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case nil:
		return ""
	case map[string]any, []any:
		b, _ := marshalJSON(t)
		return string(b)
	}
	return fmt.Sprint(v)
}

// escapeSegment escapes s as exactly one path segment: everything but
// RFC 3986 unreserved characters is percent-encoded, and a segment of dots
// alone ("." or "..") is encoded too, so that nothing can climb the path.
func escapeSegment(s string) string {
	if strings.Trim(s, ".") == "" {
		return strings.Repeat("%2E", len(s))
	}
	return escapeUnreserved(s)
}

// escapeQuery escapes a query name or value: everything but unreserved
// characters is percent-encoded (a space is %20).
func escapeQuery(s string) string { return escapeUnreserved(s) }

func escapeUnreserved(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !unreserved(c) && !strings.ContainsRune("!#$%&'*+^`|", rune(c)) {
			return false
		}
	}
	return true
}

// isCTL reports a control character other than horizontal tab.
func isCTL(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }

// sortedMap iterates a map in key order.
func sortedMap[V any](m map[string]V) func(yield func(string, V) bool) {
	return func(yield func(string, V) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}
