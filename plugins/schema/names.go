package schema

import "sort"

// Bounds of PropertyNames: the first levels of a schema, at most so many
// names. Xero's invoices are a wrapper, its array, and the invoice's own
// properties: three levels.
const (
	propertyDepth    = 3
	maxPropertyNames = 60
	// maxPropertyName: a longer name is no word a person asks with, and
	// a hostile document's megabyte-long one is not stored per tool.
	maxPropertyName = 64
)

// PropertyNames are the property names of the objects schema s
// describes, outer levels first, to propertyDepth levels of nesting and
// at most maxPropertyNames in all, each at most maxPropertyName bytes
// (a longer one is left out): an array's items, allOf, oneOf and anyOf
// members count as the object they describe, each reference followed
// once (a cycle ends there). Tool search reads them from what a tool
// answers (issue 49).
func PropertyNames(s any, lookup Lookup) []string {
	w := namesWalk{lookup: lookup, seen: map[string]bool{}, out: make([]string, 0, maxPropertyNames)}
	level := []any{s}
	var objs []map[string]any
	var names []string
	for d := 0; d < propertyDepth && len(level) > 0 && len(w.out) < maxPropertyNames; d++ {
		var props []any
		for _, v := range level {
			objs = w.objects(v, 0, objs[:0])
			for _, obj := range objs {
				ps, _ := obj["properties"].(map[string]any)
				names = names[:0]
				for name := range ps {
					names = append(names, name)
				}
				sort.Strings(names)
				for _, name := range names {
					if len(w.out) < maxPropertyNames && len(name) <= maxPropertyName {
						w.out = append(w.out, name)
					}
					props = append(props, ps[name])
				}
			}
		}
		level = props
	}
	return w.out
}

// namesWalk is one PropertyNames: the references it has followed (each
// once: a cycle ends there) and the names found.
type namesWalk struct {
	lookup Lookup
	seen   map[string]bool
	out    []string
}

// objects appends to out the object schemas v stands for: itself, its
// items, the members of allOf, oneOf and anyOf, through references.
func (w *namesWalk) objects(v any, hops int, out []map[string]any) []map[string]any {
	m, _ := v.(map[string]any)
	if m == nil || hops > maxObjectHops {
		return out
	}
	if ref, ok := m["$ref"].(string); ok {
		if w.seen[ref] {
			return out
		}
		w.seen[ref] = true
		if r, err := w.lookup.Deref(m); err == nil {
			out = w.objects(r, hops+1, out)
		}
		return out
	}
	if _, ok := m["properties"].(map[string]any); ok {
		out = append(out, m)
	}
	out = w.objects(m["items"], hops+1, out)
	for _, k := range [...]string{"allOf", "oneOf", "anyOf"} {
		list, _ := m[k].([]any)
		for _, x := range list {
			out = w.objects(x, hops+1, out)
		}
	}
	return out
}

// maxObjectHops bounds the schemas between a property and the objects
// it stands for (an array of a reference to an allOf…).
const maxObjectHops = 4
