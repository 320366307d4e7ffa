package schema

// StripOmitted undoes what strict mode does to optional arguments: there the
// LLM must send every property and sends null for one it means to omit.
// Given the arguments of a call made against a strict schema and original,
// the non-strict Resolve result for the same input, it returns the arguments
// without the null values of properties original does not require, in
// nested objects and arrays too. args is not modified.
//
// Where original offers alternatives (anyOf), a nested object is checked
// against the first alternative that has properties.
func StripOmitted(args map[string]any, original map[string]any) map[string]any {
	props, _ := original["properties"].(map[string]any)
	required := make(map[string]bool)
	if req, ok := original["required"].([]any); ok {
		for _, name := range req {
			if name, ok := name.(string); ok {
				required[name] = true
			}
		}
	}
	out := make(map[string]any, len(args))
	for name, v := range args {
		prop, known := props[name].(map[string]any)
		if v == nil && known && !required[name] {
			continue
		}
		out[name] = stripValue(v, prop)
	}
	return out
}

func stripValue(v any, s map[string]any) any {
	switch v := v.(type) {
	case map[string]any:
		if obj := objectSchema(s); obj != nil {
			return StripOmitted(v, obj)
		}
	case []any:
		items, ok := s["items"].(map[string]any)
		if !ok {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = stripValue(e, items)
		}
		return out
	}
	return v
}

// objectSchema returns s, or its first alternative, that lists properties.
func objectSchema(s map[string]any) map[string]any {
	if _, ok := s["properties"]; ok {
		return s
	}
	alts, _ := s["anyOf"].([]any)
	if alts == nil {
		alts, _ = s["oneOf"].([]any)
	}
	for _, alt := range alts {
		if alt, ok := alt.(map[string]any); ok {
			if _, ok := alt["properties"]; ok {
				return alt
			}
		}
	}
	return nil
}
