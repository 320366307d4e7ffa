package schema

import (
	"maps"
	"slices"
)

// The keywords whose values hold subschemas, by the value's shape: one
// schema, a list of them, or a map of them by name. The names in such a
// map are a property's (or a definition's), never keywords: a property
// called "nullable" or "oneOf" is a property. Every other keyword's value
// (enum, const, default, examples, x-*) is data, never walked.
var (
	oneSchemaKeywords  = set("additionalProperties", "propertyNames", "items", "additionalItems", "contains", "not", "if", "then", "else", "unevaluatedProperties", "unevaluatedItems")
	schemaListKeywords = set("allOf", "anyOf", "oneOf", "prefixItems", "items")
	schemaMapKeywords  = set("properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions")
)

// Walk calls f on s and on every schema object under it, parents first.
// f may change the keywords of the object it is given that hold no
// subschemas.
func Walk(s map[string]any, f func(map[string]any)) {
	f(s)
	for k, v := range s {
		for sub := range subschemas(k, v) {
			Walk(sub, f)
		}
	}
}

// subschemas yields the schema objects in v, the value of keyword k.
func subschemas(k string, v any) func(yield func(map[string]any) bool) {
	return func(yield func(map[string]any) bool) {
		switch t := v.(type) {
		case map[string]any:
			if oneSchemaKeywords[k] {
				yield(t)
				return
			}
			if schemaMapKeywords[k] {
				for _, x := range t {
					if m, ok := x.(map[string]any); ok && !yield(m) {
						return
					}
				}
			}
		case []any:
			if schemaListKeywords[k] {
				for _, x := range t {
					if m, ok := x.(map[string]any); ok && !yield(m) {
						return
					}
				}
			}
		}
	}
}

// mapSubschemas returns v, the value of keyword k, with each subschema s
// in it replaced by f(s) where f reports a change; v is copied only then.
func mapSubschemas(k string, v any, f func(map[string]any) (map[string]any, bool)) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		if oneSchemaKeywords[k] {
			return f(t)
		}
		if !schemaMapKeywords[k] {
			return v, false
		}
		var out map[string]any
		for name, x := range t {
			if m, ok := x.(map[string]any); ok {
				if nm, changed := f(m); changed {
					if out == nil {
						out = maps.Clone(t)
					}
					out[name] = nm
				}
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		if !schemaListKeywords[k] {
			return v, false
		}
		var out []any
		for i, x := range t {
			if m, ok := x.(map[string]any); ok {
				if nm, changed := f(m); changed {
					if out == nil {
						out = slices.Clone(t)
					}
					out[i] = nm
				}
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}
