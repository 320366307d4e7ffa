package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// unknownField returns the first key of the JSON object body that t (a
// struct) has no field for, with its path under prefix, and the names t
// accepts there; "" when every key is known. Like encoding/json it matches
// names case-insensitively. It descends into struct fields, not into
// arrays, raw JSON or types that decode themselves (an OpenAI message has
// its own, open, format). A body that is not an object is left to the
// decoder to report.
func unknownField(body []byte, t reflect.Type, prefix string) (field string, accepted []string) {
	if !gjson.ValidBytes(body) {
		return "", nil
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return "", nil
	}
	fields := jsonFields(t)
	root.ForEach(func(k, v gjson.Result) bool {
		ft, ok := lookupField(fields, k.String())
		if !ok {
			field = prefix + k.String()
			if k.String() == "" {
				field = prefix + `""` // an empty key is unknown too
			}
			for _, f := range fields {
				accepted = append(accepted, f.name)
			}
			return false
		}
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && v.IsObject() && !reflect.PointerTo(ft).Implements(jsonUnmarshaler) {
			field, accepted = unknownField([]byte(v.Raw), ft, prefix+k.String()+".")
		}
		return field == ""
	})
	return field, accepted
}

type jsonField struct {
	name string
	typ  reflect.Type
}

// fieldsByType caches jsonFields: every runtime request checks its body's
// keys, and reading the struct tags again each time cost 7 allocations a
// request.
var fieldsByType sync.Map // reflect.Type → []jsonField

// jsonFields are the JSON names of t's exported fields, in order. The
// slice is shared: callers must not modify it.
func jsonFields(t reflect.Type) []jsonField {
	if f, ok := fieldsByType.Load(t); ok {
		return f.([]jsonField)
	}
	out := structFields(t)
	fieldsByType.Store(t, out)
	return out
}

func structFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, structFields(f.Type)...) // promoted, as encoding/json does
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, typ: f.Type})
	}
	return out
}

func lookupField(fields []jsonField, key string) (reflect.Type, bool) {
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			return f.typ, true
		}
	}
	return nil, false
}
