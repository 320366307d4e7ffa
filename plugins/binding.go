package plugins

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/plugins/schema"
)

// Difference returns the first field, in a fixed order, in which inline
// is not the catalog plugin row as the binding rule reads it (see
// auth.Catalog.Bind), or "" when it is: equal in execution, auth_config,
// fixed_params and required_credentials once both are normalised (JSON
// re-serialised, method case, the default execution type, the effective
// and sorted required_credentials), and with row's parameters except for
// descriptions and optional properties left out. The field is a dotted
// path ("execution.base_url", "parameters.additionalProperties"); it
// never holds a value.
func Difference(row, inline *Plugin) string {
	pairs := []struct {
		field    string
		row, got any
	}{
		{"execution", normalExecution(row), normalExecution(inline)},
		{"auth_config", normalAuth(row.AuthConfig), normalAuth(inline.AuthConfig)},
		{"fixed_params", nonNil(row.FixedParams), nonNil(inline.FixedParams)},
		{"required_credentials", normalRequired(row), normalRequired(inline)},
	}
	for _, p := range pairs {
		if d := firstDiff(p.field, generic(p.row), generic(p.got)); d != "" {
			return d
		}
	}
	return paramsDiff(generic(row.Parameters), generic(inline.Parameters))
}

func normalExecution(p *Plugin) Execution {
	e := p.Execution
	e.Type = p.ExecType()
	e.Method = strings.ToUpper(e.Method)
	return e
}

// normalAuth spells out the defaults a document may leave implicit: a
// mapping entry's location, an oauth2 grant and auth style.
func normalAuth(a AuthConfig) AuthConfig {
	a.Mapping = slices.Clone(a.Mapping)
	for i := range a.Mapping {
		a.Mapping[i].Location = cmp.Or(a.Mapping[i].Location, "header")
	}
	if o := a.OAuth2; o != nil {
		n := *o
		n.Grant = o.EffectiveGrant()
		n.AuthStyle = cmp.Or(o.AuthStyle, "header")
		a.OAuth2 = &n
	}
	return a
}

func normalRequired(p *Plugin) []string {
	return slices.Compact(slices.Sorted(slices.Values(p.Credentials())))
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// generic is v as encoding/json decodes its JSON: maps, slices, float64s,
// strings, bools and nils, whatever types or spelling it came in.
func generic(v any) any {
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return fmt.Sprintf("unencodable %T", v) // equal only to the same failure
		}
	}
	var out any
	if len(b) > 0 && json.Unmarshal(b, &out) != nil {
		return "invalid JSON"
	}
	return out
}

// paramsDiff compares the parameter schemas: the root's keywords must be
// equal but for descriptions, and each property the inline schema keeps
// must be the row's; a row property it leaves out must be optional.
func paramsDiff(row, inline any) string {
	const field = "parameters"
	r, ok1 := row.(map[string]any)
	in, ok2 := inline.(map[string]any)
	if !ok1 || !ok2 {
		return firstDiff(field, row, inline)
	}
	dropDescriptions(r)
	dropDescriptions(in)
	rp, _ := r["properties"].(map[string]any)
	ip, ok := in["properties"].(map[string]any)
	if !ok && in["properties"] != nil {
		return field + ".properties"
	}
	required, _ := r["required"].([]any)
	for _, name := range slices.Sorted(mapKeys(rp, ip)) {
		sub := field + ".properties." + name
		rv, inRow := rp[name]
		iv, inInline := ip[name]
		switch {
		case !inRow:
			return sub // a property the row does not declare
		case !inInline:
			if slices.Contains(required, any(name)) {
				return sub // a required property left out
			}
		default:
			if d := firstDiff(sub, rv, iv); d != "" {
				return d
			}
		}
	}
	delete(r, "properties")
	delete(in, "properties")
	for _, m := range []map[string]any{r, in} {
		if req, ok := m["required"].([]any); ok {
			m["required"] = sortedAny(req)
		}
	}
	return firstDiff(field, r, in)
}

// dropDescriptions removes the description keyword of every schema object
// in s, in place (s is freshly decoded): a property called description
// stays, and so does a description inside a value (a default, an enum).
func dropDescriptions(s map[string]any) {
	schema.Walk(s, func(m map[string]any) {
		if _, text := m["description"].(string); text {
			delete(m, "description")
		}
	})
}

// firstDiff is the path of the first place, in key order, where a and b
// (decoded JSON) differ, or "". An absent key equals null.
func firstDiff(path string, a, b any) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path
		}
		for _, k := range slices.Sorted(mapKeys(x, y)) {
			if d := firstDiff(path+"."+k, x[k], y[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return path
		}
		for i := range x {
			if d := firstDiff(fmt.Sprintf("%s[%d]", path, i), x[i], y[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a, b) {
		return path
	}
	return ""
}

// mapKeys iterates the keys of a and b, each once.
func mapKeys(a, b map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
		for k := range b {
			if _, dup := a[k]; !dup && !yield(k) {
				return
			}
		}
	}
}

func sortedAny(xs []any) []any {
	out := slices.Clone(xs)
	slices.SortFunc(out, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return out
}
