package schema

import (
	"fmt"
	"maps"
	"slices"
)

// owned says what of a map that merges go into is the map's own, not
// shared with a schema merged earlier: allOf's members are merged one
// after another, and copying the properties and required united so far
// at each member made an allOf of n members cost n² (5,000 members of a
// property each took 1.2 s).
type owned struct {
	props    bool         // dst["properties"]
	required map[any]bool // the names of dst["required"], once it is dst's own
}

// merge merges src into dst, which the caller owns: properties and required
// are united, types intersected, and otherwise dst's keywords win. own
// carries what dst owns from one merge into it to the next (nil: dst's
// properties and required are shared).
func (r *resolver) merge(dst, src map[string]any, own *owned) {
	if own == nil {
		own = &owned{}
	}
	// Keywords that can conflict first, in a fixed order, for stable warnings.
	if st, ok := src["type"]; ok {
		if dt, ok := dst["type"]; ok {
			if t, ok := intersectTypes(dt, st); ok {
				dst["type"] = t
			} else {
				r.warn("conflicting types %v and %v; kept %v", typeString(dt), typeString(st), typeString(dt))
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if _, ok := src[k]; ok {
			if _, ok := dst[k]; ok {
				r.warn("two %s lists to merge; kept the first", k)
			}
		}
	}
	if sp, ok := src["properties"].(map[string]any); ok {
		if dp, ok := dst["properties"].(map[string]any); ok {
			if !own.props {
				dp, own.props = maps.Clone(dp), true
			}
			dst["properties"] = r.mergeProperties(dp, sp)
		}
	}
	if sr, ok := src["required"].([]any); ok {
		if dr, ok := dst["required"].([]any); ok {
			if own.required == nil {
				dr = slices.Clone(dr)
				own.required = make(map[any]bool, len(dr))
				for _, name := range dr {
					if key, ok := name.(string); ok {
						own.required[key] = true
					}
				}
			}
			for _, name := range sr {
				key, ok := name.(string)
				if !ok {
					if !slices.Contains(dr, name) { // not a name: kept as before, rare
						dr = append(dr, name)
					}
					continue
				}
				if !own.required[key] {
					own.required[key] = true
					dr = append(dr, name)
				}
			}
			dst["required"] = dr
		}
	}
	for k, v := range src {
		if _, ok := dst[k]; !ok {
			dst[k] = v
		}
	}
}

// mergeProperties adds sp to dp, which the caller owns, merging the
// schemas of a property both define, and returns dp.
func (r *resolver) mergeProperties(dp, sp map[string]any) map[string]any {
	out := dp
	r.push("properties")
	for _, name := range slices.Sorted(maps.Keys(sp)) {
		d, inDst := out[name].(map[string]any)
		s, isMap := sp[name].(map[string]any)
		switch {
		case !inDst:
			if _, ok := out[name]; !ok {
				out[name] = sp[name]
			}
		case isMap:
			merged := maps.Clone(d)
			r.push(name)
			r.merge(merged, s, nil)
			r.pop()
			out[name] = merged
		}
	}
	r.pop()
	return out
}

// intersectTypes intersects two "type" values; ok is false if nothing is
// left.
func intersectTypes(a, b any) (_ any, ok bool) {
	bs := typeList(b)
	var both []any
	for _, t := range typeList(a) {
		switch {
		case slices.Contains(bs, t):
		case t == "number" && slices.Contains(bs, "integer"):
			t = "integer"
		case t == "integer" && slices.Contains(bs, "number"):
		default:
			continue
		}
		if !slices.Contains(both, any(t)) {
			both = append(both, t)
		}
	}
	switch len(both) {
	case 0:
		return nil, false
	case 1:
		return both[0], true
	}
	return both, true
}

func typeList(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		var list []string
		for _, v := range t {
			if s, ok := v.(string); ok {
				list = append(list, s)
			}
		}
		return list
	}
	return nil
}

func typeString(t any) string {
	if s, ok := t.(string); ok {
		return s
	}
	return fmt.Sprint(typeList(t))
}

func hasType(s map[string]any, t string) bool {
	return slices.Contains(typeList(s["type"]), t)
}

// untyped reports whether s accepts any value as far as the LLM can tell.
func untyped(s map[string]any) bool {
	for _, k := range []string{"type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const"} {
		if _, ok := s[k]; ok {
			return false
		}
	}
	return true
}

// normalize finishes a schema the resolver owns (see the package comment).
func (r *resolver) normalize(s map[string]any) map[string]any {
	for _, kw := range [...][2]string{{"minimum", "exclusiveMinimum"}, {"maximum", "exclusiveMaximum"}} {
		bound, exclusive := kw[0], kw[1]
		if excl, ok := s[exclusive].(bool); ok {
			delete(s, exclusive)
			if v, ok := s[bound]; ok && excl {
				s[exclusive] = v
				delete(s, bound)
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) <= 1 {
			delete(s, k)
			if len(alts) == 1 {
				r.merge(s, alts[0].(map[string]any), nil)
			}
		}
	}
	if _, ok := s["type"]; !ok {
		if _, ok := s["properties"]; ok {
			s["type"] = "object"
		} else if _, ok := s["items"]; ok {
			s["type"] = "array"
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		filterRequired(s, func(name string) bool {
			_, ok := props[name]
			return ok
		})
	}
	nullable := s["nullable"] == true
	delete(s, "nullable")
	if r.opts.Strict {
		s = r.strict(s)
	}
	if nullable {
		s = makeNullable(s)
	}
	return s
}

// filterRequired keeps the names in s's required list that keep accepts.
func filterRequired(s map[string]any, keep func(string) bool) {
	req, ok := s["required"].([]any)
	if !ok {
		return
	}
	if !slices.ContainsFunc(req, func(v any) bool {
		name, ok := v.(string)
		return !ok || !keep(name)
	}) {
		return
	}
	var kept []any
	for _, v := range req {
		if name, ok := v.(string); ok && keep(name) {
			kept = append(kept, name)
		}
	}
	if len(kept) == 0 {
		delete(s, "required")
		return
	}
	s["required"] = kept
}

// The formats OpenAI's strict mode accepts.
var strictFormats = set("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid")

// strict rewrites s for OpenAI's strict mode (see the package comment).
func (r *resolver) strict(s map[string]any) map[string]any {
	delete(s, "minLength")
	delete(s, "maxLength")
	delete(s, "default")
	delete(s, "examples")
	delete(s, "contentEncoding")
	delete(s, "contentMediaType")
	if alts, ok := s["oneOf"]; ok {
		// Strict mode knows anyOf only.
		delete(s, "oneOf")
		if _, ok := s["anyOf"]; !ok {
			s["anyOf"] = alts
		}
	}
	if f, ok := s["format"].(string); ok && !strictFormats[f] {
		delete(s, "format")
	}
	if untyped(s) {
		s["type"] = []any{"string", "number", "boolean", "null"}
		return s
	}
	if !hasType(s, "object") {
		return s
	}
	props, _ := s["properties"].(map[string]any)
	optional := make(map[string]bool, len(props))
	for name := range props {
		optional[name] = true
	}
	req, _ := s["required"].([]any)
	for _, name := range req {
		if name, ok := name.(string); ok {
			delete(optional, name)
		}
	}
	names := slices.Sorted(maps.Keys(props))
	all := make([]any, len(names))
	strictProps := make(map[string]any, len(props))
	for i, name := range names {
		all[i] = name
		p := props[name]
		if pm, ok := p.(map[string]any); ok && optional[name] {
			p = makeNullable(pm)
		}
		strictProps[name] = p
	}
	s["properties"] = strictProps
	s["required"] = all
	if ap, ok := s["additionalProperties"]; ok && ap != false {
		r.warn("additionalProperties is not allowed in strict mode; dropped")
	}
	s["additionalProperties"] = false
	return s
}

var nullSchema = map[string]any{"type": "null"}

// makeNullable returns s also accepting null, without changing s.
func makeNullable(s map[string]any) map[string]any {
	if _, isConst := s["const"]; !isConst {
		switch t := s["type"].(type) {
		case string:
			if t == "null" {
				return s
			}
			return withNullEnum(s, []any{t, "null"})
		case []any:
			if slices.Contains(t, any("null")) {
				return s
			}
			return withNullEnum(s, append(slices.Clip(t), "null"))
		}
		for _, k := range []string{"anyOf", "oneOf"} {
			alts, ok := s[k].([]any)
			if !ok {
				continue
			}
			if slices.ContainsFunc(alts, func(v any) bool { return hasType(v.(map[string]any), "null") }) {
				return s
			}
			c := maps.Clone(s)
			c[k] = append(slices.Clip(alts), maps.Clone(nullSchema))
			return c
		}
		if untyped(s) {
			return s // null is already accepted
		}
	}
	return map[string]any{"anyOf": []any{s, maps.Clone(nullSchema)}}
}

// withNullEnum returns a copy of s with the given type and null added to its
// enum, if any.
func withNullEnum(s map[string]any, typ []any) map[string]any {
	c := maps.Clone(s)
	c["type"] = typ
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, nil) {
		c["enum"] = append(slices.Clip(enum), nil)
	}
	return c
}
