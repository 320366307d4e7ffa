package api

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// fastDecoder is a request body with a decoder for its common, well-typed
// form. decodeFast reports false, leaving the receiver untouched, for
// anything else: decodeBody then decodes with encoding/json, whose rules
// (case-insensitive keys, merging duplicates) and errors (which field,
// what was expected) stay the contract. FuzzExecuteRequestDecode checks
// that both agree wherever the fast path answers. decodeFast takes no key
// that is not a field of the type, so decodeStrict skips its unknown-field
// pass for a body it took (the fuzz test checks that too).
type fastDecoder interface {
	decodeFast(body []byte) bool
}

// decodeFast reads a POST /v1/execute body with gjson. It exists for
// speed: encoding/json scans the inline plugin twice (validation, then
// skipping it into a RawMessage), which took 6 µs of a call's CPU in the
// benchmark (go run ./bench -only exec).
func (req *ExecuteRequest) decodeFast(body []byte) bool {
	// encoding/json replaces invalid UTF-8 in strings; gjson keeps it.
	if !utf8.Valid(body) || !gjson.ValidBytes(body) {
		return false
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return false
	}
	var out ExecuteRequest
	var seen uint8 // fields already read, one bit each
	ok := true
	root.ForEach(func(k, v gjson.Result) bool {
		// An escaped key or string may be unescaped differently: leave
		// those to encoding/json.
		field := 0
		switch {
		case strings.IndexByte(k.Raw, '\\') >= 0:
			return fail(&ok)
		case k.Str == "name":
			field = 1
			ok = plainString(v)
			out.Name = v.Str
		case k.Str == "plugin":
			field = 2
			out.Plugin = []byte(v.Raw)
		case k.Str == "arguments":
			field = 3
			out.Arguments = []byte(v.Raw)
		case k.Str == "user_id":
			field = 4
			ok = out.UserID.UnmarshalJSON([]byte(v.Raw)) == nil
		case k.Str == "credentials":
			field = 5
			ok = v.IsObject()
			out.Credentials = make(map[string]string)
			v.ForEach(func(ck, cv gjson.Result) bool {
				if _, dup := out.Credentials[ck.Str]; dup || !plainString(ck) || !plainString(cv) {
					return fail(&ok)
				}
				out.Credentials[ck.Str] = cv.Str
				return true
			})
		default: // fixed_params, unknown keys, keys in another case
			return fail(&ok)
		}
		// A duplicate key merges in encoding/json.
		if seen&(1<<field) != 0 {
			return fail(&ok)
		}
		seen |= 1 << field
		return ok
	})
	if ok {
		*req = out
	}
	return ok
}

func fail(ok *bool) bool {
	*ok = false
	return false
}

// plainString reports whether v is a string without escapes, whose value
// is its raw text.
func plainString(v gjson.Result) bool {
	return v.Type == gjson.String && strings.IndexByte(v.Raw, '\\') < 0
}
