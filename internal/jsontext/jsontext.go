// Package jsontext tells which strings the hot paths that write JSON by
// hand (the execution envelope, the record spool's frames, the stdio
// transport's answers) may write as they are, between quotes, and still
// produce encoding/json's bytes.
package jsontext

import "unicode/utf8"

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

const hexDigits = "0123456789abcdef"

// AppendString appends s quoted as encoding/json quotes it with HTML
// escaping off (json.Encoder.SetEscapeHTML(false)): invalid UTF-8 as
// U+FFFD, U+2028 and U+2029 escaped. The hand-written encoders use it for
// strings that are not Plain.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
