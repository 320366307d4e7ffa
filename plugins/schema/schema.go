// Package schema is the one schema resolver shared by the OpenAPI importer,
// the OpenAPI query tools and the MCP tool importer. It expands $ref
// references inline, prunes every cycle, bounds reference depth and output
// size, degrades a broken subschema instead of failing the whole schema, and
// by default normalizes the result to the schema subset OpenAI function
// calling accepts.
//
// How a reference is looked up is the only difference between its callers
// (see [Lookup], [OpenAPILookup], [JSONSchemaLookup]).
//
// # Normalization
//
// Unless [Options.Raw] is set, the output keeps only these keywords:
//
//	type, properties, required, additionalProperties, items, anyOf, oneOf,
//	enum, const, description, title, default, examples, format,
//	pattern, minLength, maxLength, minimum, maximum,
//	exclusiveMinimum, exclusiveMaximum, multipleOf, minItems, maxItems,
//	contentEncoding, contentMediaType (they say a string is a file, or
//	its base64)
//
// and rewrites these:
//
//   - nullable: true (OpenAPI 3.0): "null" is added to a type
//     (["string", "null"]) and to an enum, or {"type": "null"} to an anyOf;
//     anything else is wrapped in anyOf [schema, {"type": "null"}].
//     3.1 type arrays are kept as they are.
//   - oneOf stays oneOf, so that validating against the result still
//     rejects a value matching several alternatives; [ForLLM] shows it to
//     the LLM as anyOf. With a discriminator, every alternative requires
//     the discriminating property with its value as a const (from the
//     discriminator's mapping, else the alternative's own single value,
//     else the referenced component's name).
//   - example becomes examples: [example] (dropped in strict mode).
//   - allOf, the target of a $ref and its siblings are merged into one
//     schema: properties and required are united, types intersected, the
//     first value of any other keyword wins; conflicts are warned about.
//   - an anyOf or oneOf with one alternative is merged into its parent.
//   - boolean exclusiveMinimum/exclusiveMaximum (3.0) become numbers.
//   - a tuple "items" list becomes items: {anyOf: [...]}.
//   - a schema with properties (items) and no type gets type object (array).
//   - required keeps only names listed in properties.
//   - readOnly and writeOnly decide which properties [Options.Direction]
//     leaves out (also from required), then are dropped.
//
// Everything else is dropped: discriminator (once applied), xml,
// externalDocs, deprecated, x-* extensions, $schema, $id, $comment, $defs,
// definitions, not, if/then/else, patternProperties, propertyNames,
// prefixItems, contains, uniqueItems, minProperties, maxProperties,
// dependent*, unevaluated*, contentSchema and any unknown keyword.
//
// [Options.Strict] additionally drops minLength, maxLength, default,
// examples, contentEncoding, contentMediaType and
// formats outside date-time, time, date, duration, email, hostname, ipv4,
// ipv6 and uuid, which OpenAI's strict mode rejects; gives every object
// additionalProperties: false and lists all its properties in required,
// making the optional ones nullable; and gives a schema with no type the
// scalar types (strict mode requires one). Use [StripOmitted] to turn the
// nulls the LLM then sends for omitted arguments back into omissions.
package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Direction says which side of an API call a schema describes.
type Direction int

const (
	Neutral  Direction = iota // keep every property
	Request                   // leave out readOnly properties
	Response                  // leave out writeOnly properties
)

// Defaults for the zero fields of [Options].
const (
	// DefaultMaxDepth keeps the request bodies of large public APIs whole
	// (OpenAI's createFineTuningJob nests 11 references deep) while
	// bounding recursive documents.
	DefaultMaxDepth = 16
	DefaultMaxNodes = 20000
)

// Options tune [Resolve]. The zero value gives LLM-ready, non-strict output.
type Options struct {
	// MaxDepth bounds the nested reference expansions along one path
	// (default DefaultMaxDepth; MCP tools use 3). Deeper references are
	// pruned like cycles.
	MaxDepth int
	// MaxNodes bounds the subschemas visited, counting every repetition of
	// a reused expansion (default DefaultMaxNodes). Past it, subschemas are
	// pruned.
	MaxNodes int
	// KeepRefs leaves a cyclic or too-deep $ref in place instead of pruning
	// it, and returns its target in Result.Components (seed 000 §4.1.4).
	KeepRefs bool
	// Direction leaves out readOnly (Request) or writeOnly (Response)
	// properties.
	Direction Direction
	// Raw skips normalization: keywords are kept as written (the OpenAPI
	// query tools show schemas as documented).
	Raw bool
	// Strict emits OpenAI strict-mode schemas. It is ignored when Raw is set.
	Strict bool
	// Parameters says the schema is a tool's parameters, which function
	// calling requires to be an object: a resolved root without a type
	// gets type object (e.g. an MCP tool's "{}"). It is the only place
	// where a type is forced: nested and wrapped schemas ({"allOf":
	// [{"$ref": ...}], "default": ...}) keep the type they resolve to.
	Parameters bool
	// Memo, if set, keeps expansions of references from one call to the
	// next (see [Memo]).
	Memo *Memo
}

// Memo keeps the expansions of references across calls of [Resolve] with
// one lookup: an importer resolving each operation of a document expands
// a component that its operations share once, not once per operation
// (2,000 operations sending one body of 3,000 properties expanded it
// 2,000 times). Expansions are shared like those repeated within one
// call (Result.Schema's deeper values are read-only). A Memo serves the
// Options of its first call; a call with other options expands afresh.
type Memo struct {
	opts Options
	used bool
	m    map[memoKey]*memoEntry
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{m: make(map[memoKey]*memoEntry)} }

// Result is a resolved schema.
type Result struct {
	// Schema is the expanded schema. Its root map is new; deeper values
	// may be shared with the input and between repeated references, so
	// treat them as read-only.
	Schema map[string]any
	// Components maps each reference left in place (KeepRefs mode) to its
	// expanded target, which may itself contain kept references, all of
	// them listed here too. It is nil unless KeepRefs is set.
	Components map[string]any
	// Warnings name each pruned, cut or degraded subschema, as
	// "JSON pointer: what happened", in walk order.
	Warnings []string
	// Truncated reports that MaxNodes was reached: subschemas past it are
	// stubs. Callers may retry with a smaller MaxDepth.
	Truncated bool
}

// Resolve expands the references of schema, looking them up with lookup (nil
// means references into schema itself, as [JSONSchemaLookup]), and
// normalizes the result as opts say. Problems below the root only degrade
// the subschema concerned and are reported in Result.Warnings; the error is
// non-nil only when the root itself is not a JSON object or is an
// unresolvable reference (a *[RefError]).
func Resolve(schema any, lookup Lookup, opts Options) (Result, error) {
	root, ok := schema.(map[string]any)
	if !ok {
		return Result{}, fmt.Errorf("schema: root is %s, want an object", jsonType(schema))
	}
	if lookup == nil {
		lookup = JSONSchemaLookup(root)
	}
	if ref, ok := root["$ref"].(string); ok {
		if _, found := lookup(ref); !found {
			return Result{}, &RefError{Ref: ref}
		}
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.MaxNodes <= 0 {
		opts.MaxNodes = DefaultMaxNodes
	}
	opts.Strict = opts.Strict && !opts.Raw

	r := &resolver{
		lookup: lookup,
		opts:   opts,
		base:   "#",
		lowHit: math.MaxInt,
		memo:   opts.Memo.entries(opts),
	}
	out, _ := r.schema(root)
	res := Result{Schema: maps.Clone(out)}
	if opts.Parameters && !opts.Raw && untyped(res.Schema) {
		res.Schema["type"] = "object"
		if opts.Strict {
			res.Schema = r.strict(res.Schema)
		}
	}
	if opts.KeepRefs {
		res.Components = make(map[string]any)
		// Expanding a component may keep further references: r.kept grows.
		for i := 0; i < len(r.kept); i++ {
			ref := r.kept[i]
			if _, done := res.Components[ref]; done {
				continue
			}
			r.base = ref
			res.Components[ref], _ = r.schema(map[string]any{"$ref": ref})
		}
	}
	res.Truncated = r.full
	for _, w := range r.warnings {
		res.Warnings = append(res.Warnings, w.String())
	}
	return res, nil
}

// entries are the expansions a call with opts may reuse and add to.
func (m *Memo) entries(opts Options) map[memoKey]*memoEntry {
	if m == nil {
		return make(map[memoKey]*memoEntry)
	}
	opts.Memo = nil
	if !m.used {
		m.opts, m.used = opts, true
	}
	if m.opts != opts {
		return make(map[memoKey]*memoEntry)
	}
	return m.m
}

// flags carry readOnly/writeOnly up to the parent, which decides whether the
// property stays.
type flags uint8

const (
	readOnly flags = 1 << iota
	writeOnly
)

func flagsOf(m map[string]any) flags {
	var f flags
	if m["readOnly"] == true {
		f |= readOnly
	}
	if m["writeOnly"] == true {
		f |= writeOnly
	}
	return f
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

type warning struct {
	base string   // "#" or the component's reference
	path []string // pointer tokens below base
	msg  string
}

func (w warning) String() string {
	var b strings.Builder
	b.WriteString(w.base)
	for _, tok := range w.path {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(tok))
	}
	b.WriteString(": ")
	b.WriteString(w.msg)
	return b.String()
}

// memoKey identifies an expansion: the same reference with the same depth
// budget expands the same way unless the reference stack makes a difference
// (see resolver.reusable).
type memoKey struct {
	ref    string
	budget int
}

type memoEntry struct {
	node     map[string]any
	flags    flags
	nodes    int       // subschemas visited, charged again on each reuse
	touched  []string  // references met while expanding
	kept     []string  // references left in place (KeepRefs)
	warnings []warning // paths relative to the reference
}

type resolver struct {
	lookup Lookup
	opts   Options
	base   string   // warning paths start here
	path   []string // pointer tokens from base to the current node
	stack  []string // references being expanded along the current path
	nodes  int      // subschemas visited
	full   bool     // MaxNodes reached
	// lowHit is the lowest stack index a cycle pointed back to since the
	// enclosing expansion began: an expansion whose cycles all close inside
	// it does not depend on the references above it.
	lowHit   int
	memo     map[memoKey]*memoEntry
	touched  []string // every reference met, in walk order (append-only)
	kept     []string // references left in place, in walk order (append-only)
	warnings []warning
}

func (r *resolver) warn(format string, args ...any) {
	r.warnings = append(r.warnings, warning{r.base, slices.Clone(r.path), fmt.Sprintf(format, args...)})
}

func (r *resolver) push(tok string) { r.path = append(r.path, tok) }
func (r *resolver) pop()            { r.path = r.path[:len(r.path)-1] }

// schema resolves one subschema.
func (r *resolver) schema(v any) (map[string]any, flags) {
	m, ok := v.(map[string]any)
	if !ok {
		if v == true {
			return map[string]any{}, 0
		}
		r.warn("%s is not a schema; any value accepted", jsonType(v))
		return r.stub(nil, nil, fmt.Sprintf("Invalid schema (%s) in the source; any value accepted.", jsonType(v))), 0
	}
	if r.nodes >= r.opts.MaxNodes {
		if !r.full {
			r.full = true
			r.warn("node limit %d reached; this and all later subschemas truncated", r.opts.MaxNodes)
		}
		return r.stub(m, nil, "Truncated: the schema is too large."), flagsOf(m)
	}
	r.nodes++
	return r.object(m)
}

// Schema-valued keywords, in the order they are walked (the order fixes
// warnings and where MaxNodes cuts).
var subschemaKeywords = []string{
	"properties", "patternProperties", "additionalProperties", "propertyNames",
	"dependentSchemas", "items", "prefixItems", "additionalItems", "contains",
	"allOf", "anyOf", "oneOf", "not", "if", "then", "else",
	"unevaluatedProperties", "unevaluatedItems",
}

var isSubschemaKeyword = set(subschemaKeywords...)

// The subschema keywords normalized output keeps, in walk order.
var normalizedSubschemas = []string{"properties", "additionalProperties", "items", "allOf", "anyOf", "oneOf"}

// kept in normalized output besides the subschemas (nullable is consumed).
var normalizedKeywords = set(
	"type", "enum", "const", "description", "title", "default", "examples", "required", "nullable",
	"format", "pattern", "minLength", "maxLength",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"minItems", "maxItems", "contentEncoding", "contentMediaType",
)

func (r *resolver) object(m map[string]any) (map[string]any, flags) {
	fl := flagsOf(m)
	// Merged into out in order, out's own keywords winning.
	var members []map[string]any
	if ref, ok := m["$ref"].(string); ok {
		t, tfl, final := r.ref(ref, m)
		if final || len(m) == 1 {
			return t, fl | tfl
		}
		fl |= tfl
		members = append(members, t)
	}

	out := make(map[string]any, len(m))
	for k, v := range m {
		switch {
		case k == "$ref" || k == "$defs" || k == "definitions" || isSubschemaKeyword[k]:
		case r.opts.Raw || normalizedKeywords[k]:
			out[k] = v
		case k == "example" && m["examples"] == nil:
			out["examples"] = []any{v}
		}
	}
	walk := normalizedSubschemas
	if r.opts.Raw {
		walk = subschemaKeywords
	}
	for _, k := range walk {
		v, ok := m[k]
		if !ok {
			continue
		}
		r.push(k)
		switch {
		case k == "properties" || k == "patternProperties" || k == "dependentSchemas":
			if props, dropped, ok := r.schemaMap(v, k == "properties"); ok {
				out[k] = props
				if len(dropped) > 0 {
					filterRequired(out, func(name string) bool { return !slices.Contains(dropped, name) })
				}
			}
		case r.opts.Raw && (k == "allOf" || k == "anyOf" || k == "oneOf" || k == "prefixItems"):
			if list, ok := r.schemaList(v); ok {
				out[k] = list
			}
		case k == "allOf":
			list, _ := r.schemaList(v)
			for _, s := range list {
				members = append(members, s.(map[string]any))
			}
		case k == "anyOf" || k == "oneOf":
			if list, ok := r.schemaList(v); ok {
				if d, ok := m["discriminator"].(map[string]any); ok {
					list = r.discriminate(list, v.([]any), d)
				}
				out[k] = list
			}
		case k == "items" && isList(v):
			list, ok := r.schemaList(v)
			switch {
			case !ok:
			case r.opts.Raw:
				out[k] = list
			default:
				out[k] = r.normalize(map[string]any{"anyOf": list})
			}
		default:
			if b, ok := v.(bool); ok {
				out[k] = b
			} else {
				out[k], _ = r.schema(v)
			}
		}
		r.pop()
	}
	own := &owned{}
	_, own.props = out["properties"] // made by schemaMap
	for _, s := range members {
		r.merge(out, s, own)
	}
	if !r.opts.Raw {
		out = r.normalize(out)
	}
	return out, fl
}

// schemaMap resolves a map of subschemas; for properties it leaves out (and
// returns the names of) those the direction excludes.
func (r *resolver) schemaMap(v any, properties bool) (map[string]any, []string, bool) {
	in, ok := v.(map[string]any)
	if !ok {
		r.warn("%s is not a map of schemas; dropped", jsonType(v))
		return nil, nil, false
	}
	out := make(map[string]any, len(in))
	var dropped []string
	for _, name := range slices.Sorted(maps.Keys(in)) {
		r.push(name)
		s, fl := r.schema(in[name])
		r.pop()
		if properties && (r.opts.Direction == Request && fl&readOnly != 0 || r.opts.Direction == Response && fl&writeOnly != 0) {
			dropped = append(dropped, name)
			continue
		}
		out[name] = s
	}
	return out, dropped, true
}

// schemaList resolves a list of subschemas.
func (r *resolver) schemaList(v any) ([]any, bool) {
	in, ok := v.([]any)
	if !ok {
		r.warn("%s is not a list of schemas; dropped", jsonType(v))
		return nil, false
	}
	out := make([]any, len(in))
	for i, s := range in {
		r.push(fmt.Sprint(i))
		out[i], _ = r.schema(s)
		r.pop()
	}
	return out, true
}

// ref expands the reference of m. final reports that the returned schema
// stands for m as a whole (pruned or degraded), so m's siblings are done.
func (r *resolver) ref(ref string, m map[string]any) (_ map[string]any, _ flags, final bool) {
	r.touched = append(r.touched, ref)
	if i := slices.Index(r.stack, ref); i >= 0 {
		r.lowHit = min(r.lowHit, i)
		return r.cut(ref, m, "recursive reference to")
	}
	budget := r.opts.MaxDepth - len(r.stack)
	if budget <= 0 {
		return r.cut(ref, m, fmt.Sprintf("reference depth limit %d reached at", r.opts.MaxDepth))
	}
	key := memoKey{ref, budget}
	if e := r.memo[key]; e != nil && r.reusable(e) {
		r.nodes += e.nodes
		r.touched = append(r.touched, e.touched...)
		r.kept = append(r.kept, e.kept...)
		for _, w := range e.warnings {
			r.warnings = append(r.warnings, warning{r.base, slices.Concat(r.path, w.path), w.msg})
		}
		return e.node, e.flags, false
	}
	target, ok := r.lookup(ref)
	if !ok {
		r.warn("unresolvable reference %s; any value accepted", ref)
		return r.stub(m, nil, "Unresolvable reference "+ref+" in the source; any value accepted."), 0, true
	}

	touched, kept, warned, nodes := len(r.touched), len(r.kept), len(r.warnings), r.nodes
	outerLow := r.lowHit
	r.lowHit = math.MaxInt
	r.stack = append(r.stack, ref)
	node, fl := r.schema(target)
	r.stack = r.stack[:len(r.stack)-1]
	if r.lowHit >= len(r.stack) && !r.full {
		e := &memoEntry{
			node:    node,
			flags:   fl,
			nodes:   r.nodes - nodes,
			touched: r.touched[touched:len(r.touched):len(r.touched)],
			kept:    r.kept[kept:len(r.kept):len(r.kept)],
		}
		for _, w := range r.warnings[warned:] {
			e.warnings = append(e.warnings, warning{msg: w.msg, path: w.path[len(r.path):]})
		}
		r.memo[key] = e
	}
	r.lowHit = min(outerLow, r.lowHit)
	return node, fl, false
}

// reusable reports whether a memoized expansion is what expanding it here
// would give: the cycle checks made while expanding it answer the same as
// long as none of the references it met is on the current stack (the entry
// had no cycle pointing above it), and reusing it must not overrun MaxNodes.
func (r *resolver) reusable(e *memoEntry) bool {
	if r.nodes+e.nodes > r.opts.MaxNodes {
		return false
	}
	for _, s := range r.stack {
		if slices.Contains(e.touched, s) {
			return false
		}
	}
	return true
}

// cut handles a reference that must not be expanded here: KeepRefs leaves it
// in place, otherwise it is pruned to its type and description.
func (r *resolver) cut(ref string, m map[string]any, reason string) (map[string]any, flags, bool) {
	target, _ := r.lookup(ref)
	target, _ = r.lookup.Deref(target) // a broken chain just leaves no type to keep
	t, _ := target.(map[string]any)
	if r.opts.KeepRefs {
		r.kept = append(r.kept, ref)
		r.warn("%s %s kept as $ref", reason, ref)
		return map[string]any{"$ref": ref}, flagsOf(t), false
	}
	r.warn("%s %s pruned", reason, ref)
	return r.stub(m, t, "Truncated: "+reason+" "+refName(ref)+"."), flagsOf(t), true
}

// stub stands for a schema that is not expanded: it keeps the type (and
// nullability) and the description of m or else of its target t, and adds
// note to the description.
func (r *resolver) stub(m, t map[string]any, note string) map[string]any {
	s := make(map[string]any, 3)
	for _, k := range []string{"type", "nullable", "description"} {
		if v, ok := m[k]; ok {
			s[k] = v
		} else if v, ok := t[k]; ok {
			s[k] = v
		}
	}
	if _, ok := s["type"]; !ok {
		if _, ok := t["properties"]; ok {
			s["type"] = "object"
		} else if _, ok := t["items"]; ok {
			s["type"] = "array"
		}
	}
	if d, _ := s["description"].(string); d != "" {
		note = d + "\n\n" + note
	}
	s["description"] = note
	if r.opts.Raw {
		return s
	}
	return r.normalize(s)
}

// refName is the last token of a reference, for descriptions.
func refName(ref string) string {
	name := ref[strings.LastIndexByte(ref, '/')+1:]
	if name == "" || name == "#" {
		return ref
	}
	return pointerUnescaper.Replace(name)
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case float64, int, int64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}
