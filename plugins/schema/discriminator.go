package schema

import (
	"maps"
	"slices"
)

// discriminate makes each resolved alternative of a oneOf (or anyOf) with
// an OpenAPI discriminator require the discriminating property with its
// value as a const: the LLM learns which value selects which shape, and a
// validator tells the shapes apart. raw is the list as written, whose
// $refs the mapping names. An alternative whose value cannot be told is
// left as it is.
func (r *resolver) discriminate(list, raw []any, d map[string]any) []any {
	prop, _ := d["propertyName"].(string)
	if prop == "" {
		return list
	}
	mapping, _ := d["mapping"].(map[string]any)
	out := make([]any, len(list))
	for i, alt := range list {
		out[i] = alt
		s, ok := alt.(map[string]any)
		if !ok {
			continue
		}
		ref := ""
		if rm, ok := raw[i].(map[string]any); ok {
			ref, _ = rm["$ref"].(string)
		}
		props, _ := s["properties"].(map[string]any)
		ps, _ := props[prop].(map[string]any)
		v, ok := discriminatorValue(ref, mapping, ps)
		if !ok {
			r.warn("discriminator %s: no value for alternative %d", prop, i)
			continue
		}
		ps = maps.Clone(ps)
		if ps == nil {
			ps = map[string]any{"type": "string"}
		}
		delete(ps, "enum")
		delete(ps, "default")
		ps["const"] = v
		s = maps.Clone(s)
		props = maps.Clone(props)
		if props == nil {
			props = map[string]any{}
		}
		props[prop] = ps
		s["properties"] = props
		if _, ok := s["type"]; !ok {
			s["type"] = "object"
		}
		req, _ := s["required"].([]any)
		if !slices.Contains(req, any(prop)) {
			s["required"] = append(slices.Clip(req), prop)
		}
		out[i] = s
	}
	return out
}

// discriminatorValue is the value that selects the alternative referenced
// by ref: its key in the mapping (whose values are references or component
// names), else the single value its property schema allows, else the
// component's name (OpenAPI's implicit mapping).
func discriminatorValue(ref string, mapping map[string]any, ps map[string]any) (any, bool) {
	if ref != "" {
		for _, k := range slices.Sorted(maps.Keys(mapping)) {
			if t, _ := mapping[k].(string); t == ref || t == refName(ref) {
				return k, true
			}
		}
	}
	if v, ok := ps["const"]; ok {
		return v, true
	}
	if e, ok := ps["enum"].([]any); ok && len(e) == 1 {
		return e[0], true
	}
	if ref != "" {
		return refName(ref), true
	}
	return nil, false
}

// ForLLM returns a normalized schema as function calling wants it: every
// oneOf keyword shown as anyOf (the LLM needs the alternatives; the stored
// schema keeps oneOf so that validation rejects a value matching several).
// Properties called oneOf and values (enum, default) stay as they are. s is
// not modified; parts without oneOf are shared.
func ForLLM(s any) any {
	if m, ok := s.(map[string]any); ok {
		out, _ := forLLM(m)
		return out
	}
	return s
}

func forLLM(t map[string]any) (map[string]any, bool) {
	var out map[string]any
	for k, v := range t {
		nv, changed := mapSubschemas(k, v, forLLM)
		if k == "oneOf" {
			if out == nil {
				out = maps.Clone(t)
			}
			delete(out, k)
			if _, both := t["anyOf"]; !both {
				out["anyOf"] = nv
			} // else the anyOf already lists what the LLM may send
			continue
		}
		if changed {
			if out == nil {
				out = maps.Clone(t)
			}
			out[k] = nv
		}
	}
	if out == nil {
		return t, false
	}
	return out, true
}
