package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzUnknownField: unknownField agrees with encoding/json's own
// DisallowUnknownFields on the runtime payloads: a body that decodes
// strictly has no unknown field, and where the decoder stops at an unknown
// field, unknownField names one.
func FuzzUnknownField(f *testing.F) {
	for _, s := range []string{
		`{"name":"x","arguments":{"a":1},"user_id":7}`,
		`{"name":"x","extra":1}`,
		`{"NAME":"x","Credentials":{"k":"v"}}`,
		`{"messages":[{"role":"user","content":"hi","odd":1}],"options":{"max_steps":2,"nope":true}}`,
		`{"options":{"stream":true},"plugins":[{"anything":1}]}`,
		`[1,2]`, `{"options":5}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return // refused by the decoder whatever unknownField says
		}
		for _, v := range []any{&ExecuteRequest{}, &RunRequest{}} {
			field, _ := unknownField([]byte(body), reflect.TypeOf(v).Elem(), "")
			dec := json.NewDecoder(bytes.NewReader([]byte(body)))
			dec.DisallowUnknownFields()
			err := dec.Decode(v)
			if err == nil && field != "" {
				t.Fatalf("%T: %s decodes strictly, but unknownField says %q", v, body, field)
			}
			if err != nil && strings.HasPrefix(err.Error(), "json: unknown field") && field == "" {
				t.Fatalf("%T: %s: encoding/json finds an unknown field (%v), unknownField none", v, body, err)
			}
		}
	})
}
