// Package jsontext tells which strings the hot paths that write JSON by
// hand (the execution envelope, the record spool's frames, the stdio
// transport's answers) may write as they are, between quotes, and still
// produce encoding/json's bytes.
package jsontext

// Plain reports whether encoding/json, with HTML escaping off
// (json.Encoder.SetEscapeHTML(false)), writes s as it is between quotes:
// no control byte, quote or backslash, and nothing past ASCII (where it
// escapes U+2028 and U+2029 and replaces invalid UTF-8).
func Plain(s string) bool { return plain(s, false) }

// PlainHTML is Plain for json.Marshal, which escapes <, > and & as well.
func PlainHTML(s string) bool { return plain(s, true) }

func plain(s string, html bool) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f || c == '"' || c == '\\':
			return false
		case html && (c == '<' || c == '>' || c == '&'):
			return false
		}
	}
	return true
}
