package openapi

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"unsafe"

	"github.com/blindexec/blindexec/plugins"
)

// An operation whose parameter schema is over an inline plugin's limits
// imports with that schema reduced rather than failing (DocuSign's
// envelope, Microsoft Graph's entities: real operations, not attacks).
// Its arguments' schemas are cut at the deepest level that brings the
// plugin within every limit: each subschema at that level that has
// structure becomes free-form of its JSON type, keeping its description
// and a note, and what is above is kept as written. A body whose fields
// are over the limits even so (thousands of them) becomes one free-form
// object argument, still sent as the body. The operation's warnings say
// what was cut and which limit made it.

// reducedShare is the share of a plugin's byte limit a reduced schema
// is cut to: one within the limit by a byte is still more than a model's
// context takes, and Microsoft Graph's 133 reduced to just within it
// would pass the import's 64 MiB (30 MB of them alone).
const reducedShare = 8

// omittedNote ends a free-form schema's description.
const omittedNote = "Structure omitted: over the plugin's size limits; see the API's documentation."

// maxCutDescription bounds a cut subschema's own description: a plugin
// of thousands of cuts stays small.
const maxCutDescription = 300

// A scalar's enum of a few values (a status, a kind) is what keeps a
// caller's argument within what the API allows, and costs little: a
// reduction keeps it (see smallEnum) where it cuts. Fifty values cover
// the enums of real documents (Graph's 9,648 have 4 at the median, and
// none of 50 or fewer is over 2 KiB); a longer list is a catalogue
// (Graph's 208 over 50, up to 826, name properties for $orderby and
// $select), which would take more of the reduced plugin's bytes than it
// saves the API.
const (
	maxKeptEnum      = 50
	maxKeptEnumBytes = 2 << 10
)

// cutKey is a subschema cut to a number of levels: the resolver shares
// expansions, so a cut is made once for every place (and operation)
// that uses it.
type cutKey struct {
	p     unsafe.Pointer
	keep  int  // levels kept below it
	enums bool // small enums kept where cut
}

type cutEntry struct {
	keep any // the cut map, held so that its address is not reused
	out  map[string]any
}

// bodyFields is a request body spread into arguments, kept so that it
// can become one free-form argument.
type bodyFields struct {
	schema   map[string]any
	required bool
	fields   int
}

// fit returns the plugin's parameter schema within the limits, reducing
// its arguments' schemas if it would be over them, with its size.
func (b *opBuilder) fit() (map[string]any, size, error) {
	root := b.schemaRoot()
	sz := b.c.meter.measure(root, false, 2) // the root and its properties are new
	over := sz.over(b.c.limits)
	if over == nil {
		return root, sz, nil
	}
	// Each try counts the root from its arguments' sizes, not by building
	// and measuring it: an operation of 2,000 arguments tries a dozen
	// levels. Only arguments that a cut can change are tried.
	orig := make([]map[string]any, len(b.args))
	var cands []int
	levels, rest := 0, 0 // the deepest argument; the deepest a cut leaves as it is
	for i, a := range b.args {
		orig[i] = a.schema
		d := b.c.meter.measure(a.schema, false, 1).depth
		levels = max(levels, d)
		if d > 1 || len(str(a.schema["description"])) > maxCutDescription {
			cands = append(cands, i)
		} else {
			rest = max(rest, d)
		}
	}
	target := b.c.limits
	target.Bytes /= reducedShare
	enums := true
	try := func(keep int) size {
		s, deepest := sz, rest
		for _, i := range cands {
			o, c := b.c.meter.measure(orig[i], false, 1), b.c.meter.measure(b.c.cut(orig[i], keep, enums), false, 1)
			s.bytes += c.bytes - o.bytes
			s.props += c.props - o.props
			s.nodes += c.nodes - o.nodes
			deepest = max(deepest, c.depth)
		}
		s.depth = 2 + deepest // the root, its properties, an argument
		return s
	}
	// The small enums kept are counted in each try; when even every
	// argument free-form is over the target with them, they go too.
	dropped := false
	if with := try(0); with.over(target) != nil {
		enums = false
		dropped = try(0).bytes < with.bytes
	}
	if s := try(0); s.over(target) != nil && s.over(b.c.limits) != nil {
		if !b.wholeBody(over) {
			return nil, size{}, &PluginLimitError{Field: "parameters", Cost: over}
		}
		return b.fit()
	}
	// The largest number of levels kept that fits (or none, if every
	// argument free-form is within the limits but not the target):
	// levels kept only shrink what is cut, so the search halves.
	lo, hi := 0, levels
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; try(mid).over(target) == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	for _, i := range cands {
		b.args[i].schema = b.c.cut(orig[i], lo, enums)
	}
	root = b.schemaRoot()
	sz = b.c.meter.measure(root, false, 2)
	var cut []string
	for i, a := range b.args {
		if !sameMap(a.schema, orig[i]) {
			cut = append(cut, a.name)
		}
	}
	what := fmt.Sprintf("subschemas nested %d levels deep made free-form", lo)
	if lo == 0 {
		what = "made free-form"
	}
	if dropped {
		what += ", their enums dropped too (kept, they were over the limit)"
	}
	b.warn("parameters reduced: %s %s (%v: an inline plugin's limit)", argList(cut), what, over)
	return root, sz, nil
}

// argList names arguments, the first ten of them.
func argList(names []string) string {
	s := "argument " + names[0]
	if len(names) > 1 {
		s = "arguments " + strings.Join(names[:min(len(names), 10)], ", ")
	}
	if len(names) > 10 {
		s += fmt.Sprintf(" and %d more", len(names)-10)
	}
	return s + ":"
}

// schemaRoot is the plugin's parameter schema: its arguments as an
// object's properties.
func (b *opBuilder) schemaRoot() map[string]any {
	props := make(map[string]any, len(b.args))
	required := []string{}
	for _, a := range b.args {
		props[a.name] = a.schema
		if a.required {
			required = append(required, a.name)
		}
	}
	root := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		root["required"] = required
	}
	return root
}

// wholeBody replaces the body's field arguments by one free-form object
// argument sent as the body, with them the plugin being over the limit
// over; false if the body cannot be sent so (multipart: each field is a
// part) or was already.
func (b *opBuilder) wholeBody(over *plugins.CostError) bool {
	if b.body == nil {
		return false
	}
	b.warn("request body of %d fields made one free-form object argument (%v: an inline plugin's limit)", b.body.fields, over)
	kept := b.args[:0]
	for _, a := range b.args {
		if a.place.In != plugins.InBody {
			kept = append(kept, a)
		}
	}
	b.args = kept
	// A body thousands of operations share is read once (cut's cache).
	s := maps.Clone(b.c.cut(b.body.schema, 0, false))
	s["type"] = "object"
	// The fields the document fixes were fixed params, always sent: the
	// caller now sends them, at their value.
	required := b.body.required
	if fixed, ok := s["properties"].(map[string]any); ok {
		names := make([]any, 0, len(fixed))
		for _, k := range sortedKeys(fixed) {
			names = append(names, k)
		}
		s["required"] = names
		required = true
	}
	b.add(arg{name: "body", schema: s, required: required,
		place: plugins.ArgPlacement{In: plugins.InBody, Name: "$"}})
	b.body = nil
	return true
}

// cut returns s with every subschema keep levels below it that has
// structure, or a long description, made free-form (s itself when keep
// is 0), keeping a scalar's small enum if enums is set, sharing what is
// unchanged.
func (c *converter) cut(s map[string]any, keep int, enums bool) map[string]any {
	if s == nil || keep > 0 && c.meter.measure(s, false, 0).depth <= keep {
		return s // no subschema that deep
	}
	key := cutKey{p: reflect.ValueOf(s).UnsafePointer(), keep: keep, enums: enums}
	if e, ok := c.cuts[key]; ok {
		return e.out
	}
	out := s
	set := func(k string, v any) {
		if sameMap(out, s) {
			out = maps.Clone(s)
		}
		out[k] = v
	}
	if keep == 0 {
		if structured(s, enums) || len(str(s["description"])) > maxCutDescription {
			out = freeForm(s, enums)
		}
	} else {
		for k, v := range s {
			switch v := v.(type) {
			case map[string]any:
				switch k {
				case "properties", "patternProperties", "dependentSchemas":
					if m := c.cutEach(v, keep-1, enums); !sameMap(m, v) {
						set(k, m)
					}
				case "items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else":
					if m := c.cut(v, keep-1, enums); !sameMap(m, v) {
						set(k, m)
					}
				}
			case []any:
				switch k {
				case "items", "prefixItems", "anyOf", "oneOf", "allOf":
					if l, changed := c.cutList(v, keep-1, enums); changed {
						set(k, l)
					}
				}
			}
		}
	}
	if c.cuts == nil {
		c.cuts = map[cutKey]cutEntry{}
	}
	c.cuts[key] = cutEntry{keep: s, out: out}
	return out
}

// cutEach cuts each subschema of a map of them (properties).
func (c *converter) cutEach(m map[string]any, keep int, enums bool) map[string]any {
	out := m
	for k, v := range m {
		sub, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if x := c.cut(sub, keep, enums); !sameMap(x, sub) {
			if sameMap(out, m) {
				out = maps.Clone(m)
			}
			out[k] = x
		}
	}
	return out
}

func (c *converter) cutList(l []any, keep int, enums bool) ([]any, bool) {
	var out []any
	for i, v := range l {
		sub, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if x := c.cut(sub, keep, enums); !sameMap(x, sub) {
			if out == nil {
				out = append([]any(nil), l...)
			}
			out[i] = x
		}
	}
	return out, out != nil
}

// structured reports a schema with more than a type and texts: nested
// schemas or lists of values, which a free-form schema drops (but a
// small enum, when enums are kept).
func structured(s map[string]any, enums bool) bool {
	for k, v := range s {
		switch v.(type) {
		case map[string]any, []any:
			if k != "type" && !(k == "enum" && enums && smallEnum(s)) {
				return true
			}
		}
	}
	return false
}

// smallEnum reports an enum a reduction keeps: a scalar's (its type, if
// given, string, number, integer or boolean, or null beside one; its
// values no objects or lists), of at most maxKeptEnum values and
// maxKeptEnumBytes, each counted as it encodes.
func smallEnum(s map[string]any) bool {
	e, ok := s["enum"].([]any)
	if !ok || len(e) > maxKeptEnum {
		return false
	}
	types := asList(s["type"])
	if t, ok := s["type"].(string); ok {
		types = []any{t}
	}
	for _, t := range types {
		switch t {
		case "string", "number", "integer", "boolean", "null":
		default:
			return false
		}
	}
	n := 0
	for _, v := range e {
		switch v := v.(type) {
		case map[string]any, []any:
			return false
		case string:
			n += len(v) + 3 // quoted, a comma
		default:
			n += len(fmt.Sprint(v)) + 1
		}
	}
	return n <= maxKeptEnumBytes
}

// freeForm is a schema that accepts any value of s's JSON type, with its
// description (cut) and the note that its structure was omitted. It
// keeps what the import and the executor read of it (kept), of its
// items, and of its properties those that fix a value: a body sent
// whole still refuses another value of a field the document fixes.
func freeForm(s map[string]any, enums bool) map[string]any {
	out := kept(s, enums)
	switch {
	case s["type"] != nil:
		out["type"] = s["type"]
	case s["properties"] != nil || s["additionalProperties"] != nil:
		out["type"] = "object"
	case s["items"] != nil || s["prefixItems"] != nil:
		out["type"] = "array"
	}
	if items, ok := s["items"].(map[string]any); ok {
		if k := kept(items, enums); len(k) > 0 {
			out["items"] = k
		}
	}
	props, _ := s["properties"].(map[string]any)
	var fixed map[string]any
	for name, v := range props {
		if p, ok := v.(map[string]any); ok {
			if _, ok := fixedValue(p); ok {
				if fixed == nil {
					fixed = map[string]any{}
				}
				fixed[name] = kept(p, false)
			}
		}
	}
	if fixed != nil {
		out["properties"] = fixed
		var required []any
		for _, r := range asList(s["required"]) {
			if _, ok := fixed[str(r)]; ok {
				required = append(required, r)
			}
		}
		if len(required) > 0 {
			out["required"] = required
		}
	}
	d := plugins.Cut(strings.TrimSpace(str(s["description"])), maxCutDescription)
	out["description"] = strings.TrimSpace(d + "\n\n" + omittedNote)
	return out
}

// kept is what a free-form schema keeps of s: the value s fixes (a const,
// a one-value enum), which the import makes a fixed param the executor
// forces over the caller's, a file's format and encoding, by which the
// executor sends a multipart field as a file part and decodes its
// base64, and, if enums is set, a scalar's small enum.
func kept(s map[string]any, enums bool) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"const", "format", "contentEncoding"} {
		if v, ok := s[k]; ok {
			out[k] = v
		}
	}
	if e, ok := s["enum"].([]any); ok && (len(e) == 1 || enums && smallEnum(s)) {
		out["enum"] = e
	}
	return out
}

func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
