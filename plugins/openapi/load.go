// Package openapi imports OpenAPI documents as plugins: one plugin per
// operation, its parameters and request body flattened into the one
// argument object the LLM fills, its server, content type, serialization
// and security turned into the execution and auth config the engine applies.
//
// The package is the library behind `blindexec import openapi` and
// POST /v1/plugins/import/openapi: [Fetch] and [Load] read a document,
// [Convert] turns it into plugins, [Sync] writes them to the store as a sync
// against the document's earlier imports.
package openapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
)

// MaxDocumentBytes bounds what Fetch reads: GitHub's description, the
// largest public one, is about 13 MB.
const MaxDocumentBytes = 64 << 20

// Document is a loaded OpenAPI document.
type Document struct {
	// Raw is the decoded document. Swagger 2.0 documents are converted to
	// the OpenAPI 3.0 shape (servers, requestBody, components) in place.
	Raw map[string]any
	// Version is the document's own version field ("3.1.0", "2.0").
	Version string
	Title   string
	// SHA256 is the hex digest of the bytes loaded.
	SHA256 string
	// Warnings are problems that a strict validator would reject but that
	// leave the operations usable.
	Warnings []string
}

// ParseError is a document that is not valid JSON or YAML.
type ParseError struct {
	Location string
	Line     int // 1-based; 0 when unknown
	Column   int // 1-based; 0 when unknown
	Msg      string
}

func (e *ParseError) Error() string {
	var pos string
	switch {
	case e.Line > 0 && e.Column > 0:
		pos = fmt.Sprintf(" line %d column %d", e.Line, e.Column)
	case e.Line > 0:
		pos = fmt.Sprintf(" line %d", e.Line)
	}
	if pos == "" {
		return fmt.Sprintf("parse %s: %s", e.Location, e.Msg)
	}
	return fmt.Sprintf("parse %s:%s: %s", e.Location, pos, e.Msg)
}

// Load decodes an OpenAPI 3.0 or 3.1 document or a Swagger 2.0 one, in
// JSON or YAML. It is lenient: it only fails on bytes that are not JSON or
// YAML or on a document that is not OpenAPI at all; everything else a
// strict validator would reject becomes a warning. location names the
// document in errors.
func Load(data []byte, location string) (*Document, error) {
	sum := sha256.Sum256(data)
	raw, err := decode(data, location)
	if err != nil {
		return nil, err
	}
	doc := &Document{Raw: raw, SHA256: hex.EncodeToString(sum[:])}
	if info, ok := raw["info"].(map[string]any); ok {
		doc.Title, _ = info["title"].(string)
	}
	switch {
	case raw["openapi"] != nil:
		doc.Version = versionString(raw["openapi"])
		if !strings.HasPrefix(doc.Version, "3.") {
			return nil, fmt.Errorf("load %s: OpenAPI version %s is not supported (want 3.0 or 3.1, or Swagger 2.0)", location, quoted(doc.Version))
		}
		if doc.Version != "3.0" && doc.Version != "3.1" && !strings.HasPrefix(doc.Version, "3.0.") && !strings.HasPrefix(doc.Version, "3.1.") {
			doc.warn("openapi version %s is newer than 3.1; read as 3.1", quoted(doc.Version))
		}
	case raw["swagger"] != nil:
		doc.Version = versionString(raw["swagger"])
		if doc.Version != "2.0" {
			return nil, fmt.Errorf("load %s: Swagger version %s is not supported (want 2.0)", location, quoted(doc.Version))
		}
		convertSwagger2(doc)
	default:
		return nil, fmt.Errorf("load %s: not an OpenAPI document: it has neither an \"openapi\" nor a \"swagger\" field", location)
	}
	doc.check()
	return doc, nil
}

// TagDescriptions are the descriptions the document gives its tags
// (top-level "tags"), by tag name: what an API's own words mean, for
// search.
func (d *Document) TagDescriptions() map[string]string {
	out := map[string]string{}
	tags, _ := d.Raw["tags"].([]any)
	for _, t := range tags {
		m, _ := t.(map[string]any)
		name, _ := m["name"].(string)
		desc, _ := m["description"].(string)
		if name != "" && strings.TrimSpace(desc) != "" {
			out[name] = desc
		}
	}
	return out
}

func (d *Document) warn(format string, args ...any) {
	d.Warnings = append(d.Warnings, fmt.Sprintf(format, args...))
}

// check records what a strict validator would reject at the document
// level. Schemas are not validated: the resolver degrades what it cannot
// use.
func (d *Document) check() {
	if d.Title == "" {
		d.warn("info.title is missing")
	}
	paths, ok := d.Raw["paths"].(map[string]any)
	if !ok {
		if d.Raw["paths"] != nil {
			d.warn("paths is not an object; no operations")
		} else if d.Raw["webhooks"] == nil {
			d.warn("the document has no paths")
		}
		return
	}
	for _, p := range sortedKeys(paths) {
		item, _ := paths[p].(map[string]any)
		for _, m := range methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			if _, ok := op["responses"]; !ok {
				d.warn("%s %s: responses is missing", strings.ToUpper(m), p)
			}
		}
	}
}

// maxQuoted bounds, in characters, a value of the document that a
// message quotes: it names the value, it does not carry the document (a
// version of a megabyte) into a log or an API answer.
const maxQuoted = 64

// quoted is s quoted for a message, cut to maxQuoted characters.
func quoted(s string) string { return strconv.Quote(plugins.Cut(s, maxQuoted)) }

func versionString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// decode reads JSON (anything starting with '{') or YAML into a map.
func decode(data []byte, location string) (map[string]any, error) {
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) { // gzip's magic: YAML would call it control characters
		return nil, &ParseError{Location: location, Msg: "the document is gzip-compressed: decompress it first (gunzip)"}
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff") // whitespace and a byte order mark
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var m map[string]any
		if err := json.Unmarshal(trimmed, &m); err != nil {
			return nil, jsonError(trimmed, location, err)
		}
		return m, nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(location, err)
	}
	if len(root.Content) == 0 {
		return nil, &ParseError{Location: location, Msg: "the document is empty"}
	}
	y := yamlDecoder{aliases: map[*yaml.Node]any{}}
	v, err := y.value(root.Content[0])
	if err != nil {
		return nil, &ParseError{Location: location, Line: y.line, Msg: err.Error()}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &ParseError{Location: location, Line: root.Content[0].Line, Msg: "the document is not a mapping (an object)"}
	}
	return m, nil
}

func jsonError(data []byte, location string, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	pe := &ParseError{Location: location, Msg: strings.TrimPrefix(err.Error(), "json: ")}
	if off >= 0 && off <= int64(len(data)) {
		before := data[:off]
		pe.Line = bytes.Count(before, []byte("\n")) + 1
		pe.Column = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	}
	return pe
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

func yamlError(location string, err error) error {
	msg := err.Error()
	pe := &ParseError{Location: location, Msg: strings.TrimPrefix(msg, "yaml: ")}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		pe.Line, _ = strconv.Atoi(m[1])
		pe.Msg = msg[len(m[0]):]
		if strings.Contains(pe.Msg, "could not find expected ':'") || strings.Contains(pe.Msg, "already defined") {
			pe.Msg += " (is the YAML indentation intact?)"
		}
	}
	return pe
}

// yamlDecoder turns a YAML node tree into the values encoding/json gives:
// mappings become map[string]any whatever their keys' types (OpenAPI
// response codes are often unquoted integers), timestamps stay strings,
// and each anchor is converted once and shared by its aliases, so that an
// alias bomb costs no more than its text.
type yamlDecoder struct {
	aliases map[*yaml.Node]any
	line    int // of the node that failed
	depth   int
}

const maxYAMLDepth = 1000

var errRecursiveAlias = errors.New("an alias refers to its own anchor (a recursive structure)")

func (y *yamlDecoder) value(n *yaml.Node) (any, error) {
	if y.depth++; y.depth > maxYAMLDepth {
		y.line = n.Line
		return nil, fmt.Errorf("nested more than %d levels deep", maxYAMLDepth)
	}
	defer func() { y.depth-- }()
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return y.value(n.Content[0])
	case yaml.AliasNode:
		if v, ok := y.aliases[n.Alias]; ok {
			if v == errRecursiveAlias {
				y.line = n.Line
				return nil, errRecursiveAlias
			}
			return v, nil
		}
		y.aliases[n.Alias] = errRecursiveAlias // in progress
		v, err := y.value(n.Alias)
		if err != nil {
			return nil, err
		}
		y.aliases[n.Alias] = v
		return v, nil
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				if err := y.merge(m, v); err != nil {
					return nil, err
				}
				continue
			}
			val, err := y.value(v)
			if err != nil {
				return nil, err
			}
			key := k.Value
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				key = k.Alias.Value
			}
			m[key] = val
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := y.value(c)
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		return s, nil
	case yaml.ScalarNode:
		return scalar(n), nil
	}
	y.line = n.Line
	return nil, fmt.Errorf("unexpected YAML node kind %d", n.Kind)
}

// merge applies a "<<" merge key: keys already set win.
func (y *yamlDecoder) merge(m map[string]any, n *yaml.Node) error {
	v, err := y.value(n)
	if err != nil {
		return err
	}
	srcs, ok := v.([]any)
	if !ok {
		srcs = []any{v}
	}
	for _, s := range srcs {
		sm, ok := s.(map[string]any)
		if !ok {
			y.line = n.Line
			return errors.New("a merge key (<<) needs a mapping or a list of mappings")
		}
		for k, x := range sm {
			if _, set := m[k]; !set {
				m[k] = x
			}
		}
	}
	return nil
}

func scalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return float64(i)
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil {
			return f
		}
	}
	return n.Value
}

// Fetch reads a document from a file path or an http(s) URL; URLs are
// fetched with client, which should be the egress-guarded one. ("-", the
// standard input, is the caller's business.)
// Its errors name the URL without its userinfo and query credentials
// (redact.Location).
func Fetch(ctx context.Context, client *http.Client, source string) ([]byte, error) {
	if !IsURL(source) {
		f, err := os.Open(source)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", source, err)
		}
		defer f.Close()
		return readAll(f, source)
	}
	shown := redact.Location(source)
	fail := func(err error) error {
		return fmt.Errorf("fetch %s: %w", shown, FetchCause(source, err))
	}
	if redact.Hides(source) {
		// Its userinfo or query credential (a sealed URL's secret): not in
		// plain text past loopback and the operator's list
		// (egress.PlaintextError).
		ctx = egress.WithCredentials(ctx, nil)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, source, nil)
	if err != nil {
		return nil, fail(err)
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch %s: HTTP %s", shown, resp.Status)
	}
	return readAll(resp.Body, shown)
}

// FetchCause is err, of a request to the URL source, as a message may
// show it beside source's redaction: url.Error quotes the URL again (its
// password as ***, a token given as the user or in the query whole), so
// its own error only; net/url's refusal of a URL whose redaction hides
// something quotes a piece of it (`invalid port ":pa"`: a password's
// first part, review79), so none of it.
func FetchCause(source string, err error) error {
	uerr := (*url.Error)(nil)
	if !errors.As(err, &uerr) {
		return err
	}
	if uerr.Op == "parse" && redact.Hides(source) {
		return errors.New("not a URL (a / ? # or @ in a user or password must be percent-encoded)")
	}
	return uerr.Err
}

// IsURL reports whether source is an http or https URL, its scheme in
// any case as Go's client takes it (review78: HTTPS://user:token@host/
// was read as a file path, refused quoting it whole).
func IsURL(source string) bool {
	for _, scheme := range []string{"http://", "https://"} {
		if len(source) >= len(scheme) && strings.EqualFold(source[:len(scheme)], scheme) {
			return true
		}
	}
	return false
}

func readAll(r io.Reader, source string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", source, err)
	}
	if len(b) > MaxDocumentBytes {
		return nil, fmt.Errorf("fetch %s: larger than %d bytes", source, MaxDocumentBytes)
	}
	return b, nil
}
