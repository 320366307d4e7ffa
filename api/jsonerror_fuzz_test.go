package api

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// FuzzDescribeJSONError: a body's type error names the key or index within
// the field (credentials.QCC_SECRET, user.permissions[1]: pathAt, from the
// decoder's offset). For any body the runtime payloads' decoding refuses
// with a type error, the path the message names is one the body holds,
// and the value there is of the kind the message says was sent: a caller
// told to fix credentials.A must not have to fix credentials.B.
func FuzzDescribeJSONError(f *testing.F) {
	for _, s := range []string{
		`{"name":"x","credentials":{"QCC_KEY":"a","QCC_SECRET":5}}`,
		`{"user":{"id":1,"permissions":["a",2]}}`,
		`{"fixed_params":{"a":1},"credentials":{"a":{"b":"c"}}}`,
		`{"credentials":{"a":"b","c":[1,{"d":2}]}}`,
		`{"messages":[{"role":"user","content":"hi"},{"role":5}]}`,
		`{"options":{"max_steps":"two"}}`,
		`{"user":{"permissions":[[],"x"]},"credentials":[]}`,
		`{"credentials":{"k":"v"},"CREDENTIALS":{"k2":7}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, v := range []any{&ExecuteRequest{}, &RunRequest{}} {
			err := json.Unmarshal([]byte(body), v)
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				continue
			}
			msg := describeJSONError(err, []byte(body), "application/json")
			field, _, ok := strings.Cut(msg, ": expected ")
			if !ok {
				t.Fatalf("%T: %s: %q names no field", v, body, msg)
			}
			if field == "(body)" || field == te.Field {
				continue // encoding/json's own name: not read from the body
			}
			var doc any
			dec := json.NewDecoder(strings.NewReader(body))
			dec.UseNumber()
			if dec.Decode(&doc) != nil {
				t.Fatalf("%T: %s: a type error for a body that is not JSON", v, body)
			}
			got, ok := walkPath(doc, field)
			if !ok {
				continue // a key holding . or [ reads as another path: not checked
			}
			if want := te.Value; !strings.HasPrefix(want, decodedKind(got)) && te.Type != userIDType {
				t.Fatalf("%T: %s: %q names %s, which holds %s (%v)", v, body, msg, field, decodedKind(got), got)
			}
		}
	})
}

// walkPath follows path (a.b[2].c) in doc; false when a key is empty or
// holds . [ or ], which make the path ambiguous ("fixed_params." names
// the key ""), and fails the walk otherwise.
func walkPath(doc any, path string) (any, bool) {
	for path != "" {
		switch d := doc.(type) {
		case map[string]any:
			key := path
			if i := strings.IndexAny(path, ".["); i >= 0 {
				key = path[:i]
			}
			for k := range d {
				if k == "" || strings.ContainsAny(k, ".[]") {
					return nil, false
				}
			}
			v, ok := d[key]
			if !ok {
				return struct{}{}, true // not there: decodedKind says so
			}
			if path[len(key):] == "." {
				return nil, false // the key "" of v
			}
			doc, path = v, strings.TrimPrefix(path[len(key):], ".")
		case []any:
			if !strings.HasPrefix(path, "[") {
				return struct{}{}, true
			}
			end := strings.IndexByte(path, ']')
			i, err := strconv.Atoi(path[1:max(end, 1)])
			if end < 0 || err != nil || i < 0 || i >= len(d) {
				return struct{}{}, true
			}
			if path[end+1:] == "." {
				return nil, false
			}
			doc, path = d[i], strings.TrimPrefix(path[end+1:], ".")
		default:
			return struct{}{}, true
		}
	}
	return doc, true
}

// decodedKind is the word encoding/json's type error uses for what v was
// decoded from.
func decodedKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return "nothing (no such path)"
}
