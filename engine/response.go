package engine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/pretty"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"

	"github.com/blindexec/blindexec/auth"
)

type bodyKind int

const (
	kindBinary bodyKind = iota
	kindText
	kindJSON
)

// Text is the output as a model reads it: text (a JSON string output,
// which is how text and CSV answers arrive) as the text itself, anything
// else as its JSON. The tool messages of the LLM loop and the /mcp
// surface both give the model this; the /v1/execute envelope keeps the
// JSON value.
func (r *Result) Text() string {
	if len(r.Output) > 0 && r.Output[0] == '"' {
		if s, ok := unquote(r.Output); ok {
			return s
		}
	}
	if len(r.Output) == 0 {
		return "null"
	}
	return string(r.Output)
}

// unquote decodes a JSON string. Apart from Text, so that the string
// json.Unmarshal fills, which escapes, is not allocated for every other
// output as well.
func unquote(b []byte) (string, bool) {
	var s string
	err := json.Unmarshal(b, &s)
	return s, err == nil
}

// shape turns a successful response into the value the LLM sees: JSON as
// JSON (compacted, then narrowed by the gjson path sel), text as a JSON
// string, binary as a description; masked, and cut to budget bytes with a
// visible marker.
func shape(resp *Response, sel string, budget int, m *auth.Masker) json.RawMessage {
	if len(resp.Body) == 0 {
		return jsonString(fmt.Sprintf("(no content: HTTP %d)", resp.StatusCode))
	}
	kind, body := bodyOf(resp)
	switch kind {
	case kindJSON:
		// Mask before shaping: a cut must not leave half a secret.
		b := m.Bytes(body)
		if !gjson.ValidBytes(b) {
			return fitText(b, budget) // not JSON after all, or masking broke a token: show it as text
		}
		// Compact (indentation costs the LLM tokens and budget), in place:
		// b is this call's own (the body read, or masking's copy of it),
		// read no more once shaped. A copy would be one more answer-sized
		// allocation a call.
		b = pretty.UglyInPlace(b)
		if sel != "" {
			r := gjson.GetBytes(b, sel)
			if !r.Exists() {
				return json.RawMessage("null")
			}
			b = []byte(r.Raw)
		}
		return fitJSON(b, budget)
	case kindText:
		return fitText(m.Bytes(body), budget)
	}
	// The type is the upstream's text, as its body is: it may echo what
	// it was sent.
	return describeBinary(m.String(resp.ContentType), len(resp.Body))
}

func describeBinary(ct string, size int) json.RawMessage {
	b, _ := marshalJSON(map[string]any{
		"content_type": cmp.Or(ct, "application/octet-stream"),
		"size":         size,
		"note":         "binary content, not shown",
	})
	return b
}

// bodyOf tells JSON, text and binary apart, by the content type first and
// the bytes second, and returns JSON and text as UTF-8 (toUTF8): masking
// then reads what the answer says, in whatever encoding it came.
func bodyOf(resp *Response) (bodyKind, []byte) {
	body := resp.Body
	mt := mediaType(resp.ContentType)
	switch {
	case mt == "application/json":
		return kindJSON, toUTF8(resp.ContentType, body) // shape validates it while compacting
	case mt == "" || strings.HasPrefix(mt, "text/") || textual[mt] || strings.HasSuffix(mt, "+xml"):
		// Many APIs label JSON text/plain or text/html, or not at all.
		// Bytes of no declared type are not read as UTF-16 or UTF-32 by
		// their first bytes: binary is only described, never shown.
		if mt != "" {
			body = toUTF8(resp.ContentType, body)
		}
		if t := bytes.TrimSpace(body); len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
			return kindJSON, body
		}
	default:
		return kindBinary, body
	}
	if !utf8.Valid(body) || bytes.IndexByte(body, 0) >= 0 {
		return kindBinary, body
	}
	return kindText, body
}

var textual = map[string]bool{
	"application/xml":                   true,
	"application/javascript":            true,
	"application/x-www-form-urlencoded": true,
	"application/yaml":                  true,
	"application/x-yaml":                true,
	"application/x-ndjson":              true,
	"application/graphql":               true,
	"application/sql":                   true,
	"application/csv":                   true,
}

// toUTF8 returns text as UTF-8, decoded from the encoding its byte-order
// mark says (which wins, as browsers read it), else its content type's
// charset, else — the way RFC 4627 tells JSON's encodings apart — the
// UTF-16 or UTF-32 its first four bytes show. Unknown charsets and text
// that does not decode are left as they are (the masker looks for the
// wide forms of secrets in raw bytes all the same).
func toUTF8(ct string, b []byte) []byte {
	enc, bom := sniffEncoding(b)
	if enc == nil && strings.Contains(strings.ToLower(ct), "charset") {
		enc = declaredEncoding(ct)
	}
	if enc == nil {
		return b[bom:]
	}
	out, err := enc.NewDecoder().Bytes(b[bom:])
	if err != nil {
		return b
	}
	return out
}

var (
	utf16LE = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	utf16BE = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	utf32LE = utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM)
	utf32BE = utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM)
)

// sniffEncoding returns the encoding b's byte-order mark names and the
// mark's length, or the UTF-16 or UTF-32 whose NULs its first four bytes
// have (a text's first characters are ASCII: '{', '[', a letter), or nil
// for UTF-8 and anything else.
func sniffEncoding(b []byte) (encoding.Encoding, int) {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		return nil, 3
	case bytes.HasPrefix(b, []byte{0, 0, 0xFE, 0xFF}):
		return utf32BE, 4
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE, 0, 0}):
		return utf32LE, 4
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return utf16BE, 2
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return utf16LE, 2
	case len(b) < 4 || b[0] != 0 && b[1] != 0:
		return nil, 0
	case b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] != 0:
		return utf32BE, 0
	case b[0] != 0 && b[1] == 0 && b[2] == 0 && b[3] == 0:
		return utf32LE, 0
	case b[0] == 0 && b[1] != 0 && b[2] == 0 && b[3] != 0:
		return utf16BE, 0
	case b[0] != 0 && b[1] == 0 && b[2] != 0 && b[3] == 0:
		return utf16LE, 0
	}
	return nil, 0
}

// declaredEncoding is the encoding of the content type's charset other
// than UTF-8, or nil.
func declaredEncoding(ct string) encoding.Encoding {
	_, params, err := mime.ParseMediaType(ct)
	cs := strings.ToLower(params["charset"])
	switch {
	case err != nil || cs == "" || cs == "utf-8" || cs == "utf8" || cs == "us-ascii":
		return nil
	case cs == "utf-32" || cs == "utf-32le":
		return utf32LE
	case cs == "utf-32be":
		return utf32BE
	case cs == "utf-16be":
		return utf16BE
	case cs == "utf-16" || cs == "utf-16le":
		return utf16LE
	}
	enc, err := htmlindex.Get(cs)
	if err != nil {
		return nil
	}
	return enc
}

// fitJSON returns b when it fits the budget; an array cut to the items
// that fit, the last one a marker; anything else as a string cut to the
// budget with a marker (it cannot stay valid JSON).
func fitJSON(b []byte, budget int) json.RawMessage {
	if len(b) <= budget {
		return b
	}
	if b[0] == '[' {
		var (
			out   bytes.Buffer
			kept  int
			total int
			full  bool
		)
		out.WriteByte('[')
		gjson.ParseBytes(b).ForEach(func(_, v gjson.Result) bool {
			total++
			if !full && out.Len()+len(v.Raw)+1 <= budget {
				if kept > 0 {
					out.WriteByte(',')
				}
				out.WriteString(v.Raw)
				kept++
			} else {
				full = true
			}
			return true
		})
		if kept > 0 {
			out.WriteByte(',')
			out.Write(jsonString(fmt.Sprintf("…[truncated: showing %d of %d items, %d bytes total]", kept, total, len(b))))
			out.WriteByte(']')
			return out.Bytes()
		}
	}
	return fitText(b, budget)
}

// fitText is text as a JSON string, cut at a character boundary to the
// budget with a marker.
func fitText(b []byte, budget int) json.RawMessage {
	if len(b) <= budget {
		return jsonString(string(b))
	}
	return jsonString(truncateUTF8(string(b), budget) + fmt.Sprintf("…[truncated: %d bytes total]", len(b)))
}

func jsonString(s string) json.RawMessage {
	b, _ := marshalJSON(s)
	return b
}

// excerpt describes a body that came with a failure: its start as text,
// masked, or a description when binary.
func excerpt(resp *Response, m *auth.Masker) map[string]any {
	d := map[string]any{"status": resp.StatusCode}
	if resp.ContentType != "" {
		d["content_type"] = resp.ContentType
	}
	if len(resp.Body) == 0 {
		return d
	}
	kind, body := bodyOf(resp)
	if kind == kindBinary {
		d["body_size"] = len(resp.Body)
		return d
	}
	s := string(body)
	if resp.Truncated {
		s = m.Cut(s)
	} else {
		s = m.String(s)
	}
	if len(s) > ErrorExcerptBytes {
		s = truncateUTF8(s, ErrorExcerptBytes) + "…[truncated]"
	}
	d["body"] = s
	return d
}

// maxErrorMessage bounds a ToolError's message, cut after masking (a cut
// before could split a secret into a part the masker cannot recognize).
const maxErrorMessage = 1000

// maskError returns a copy of te with every secret masked, in the message
// and in the details, and the message cut to maxErrorMessage bytes.
func maskError(te *ToolError, m *auth.Masker) *ToolError {
	out := *te
	out.Message = m.String(te.Message)
	if len(out.Message) > maxErrorMessage {
		out.Message = truncateUTF8(out.Message, maxErrorMessage) + "…"
	}
	if m == nil {
		return &out
	}
	if te.Details != nil {
		if b, err := json.Marshal(te.Details); err == nil {
			if masked := m.Bytes(b); !bytes.Equal(masked, b) {
				out.Details = json.RawMessage(masked)
			}
		}
	}
	return &out
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
