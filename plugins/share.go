package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The compiler's work grows with the square of the subschemas one
// compilation holds (it looks each one up in a list), and its check of a
// schema against the draft's metaschema with the schema's depth. An
// imported schema is an expansion of its document's components, repeated
// wherever they are used: Microsoft Graph's largest holds 17,000
// subschemas, of which 2,400 differ, and took seconds to compile as it
// is. So parameter schemas are compiled shared: every subschema (with
// subschemas of its own) that occurs more than once, in one schema or in
// any of those compiled together, is written once under
// the $defs of the resource they are compiled in, and each place refers
// to it. That accepts the same values and leaves the same errors
// (argumentErrors reads no schema locations).

// decodeParameters decodes a parameter schema as the compiler reads it:
// an object of type object, OpenAPI 3.0's nullable made a type, after
// edit (if not nil) has changed its root.
func decodeParameters(params json.RawMessage, edit func(root map[string]any)) (map[string]any, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("required: a JSON Schema object with type \"object\"")
	}
	var doc any
	if err := json.Unmarshal(params, &doc); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	root, ok := doc.(map[string]any)
	if !ok || root["type"] != "object" {
		return nil, fmt.Errorf("the root must be a JSON Schema object with \"type\": \"object\"")
	}
	if edit != nil {
		edit(root)
	}
	nullableToType(root)
	return root, nil
}

// sharedBatch compiles schemas with their repeated subschemas shared.
type sharedBatch struct {
	ids   map[string]int  // canonical JSON, subschemas by number → number
	byMap map[uintptr]int // each subschema object → its number
	count []int           // by number: how often it occurs
	leaf  []bool          // by number: it has no subschemas
	// Schemas that may refer to their own parts ($ref, $id, ...) are
	// compiled as they are: moving a part could change what a reference
	// resolves to.
	plain map[uintptr]bool

	built []map[string]any // by number: the subschema as compiled
	defs  map[string]any   // the batch resource's $defs
	// number's scratch, by depth.
	depth int
	bufs  [][]byte
	keys  [][]string
}

func newSharedBatch() *sharedBatch {
	return &sharedBatch{ids: map[string]int{}, byMap: map[uintptr]int{}, plain: map[uintptr]bool{}}
}

func (b *sharedBatch) addRoot(params []byte, root map[string]any) {
	for _, kw := range referenceKeywords {
		if bytes.Contains(params, kw) {
			b.plain[reflect.ValueOf(root).Pointer()] = true
			return
		}
	}
	b.number(root)
}

// referenceKeywords are the keywords by which a schema names its own parts
// (or changes the draft that reads them), as they appear in JSON.
var referenceKeywords = [][]byte{
	[]byte(`"$ref"`), []byte(`"$id"`), []byte(`"$anchor"`), []byte(`"$dynamic`), []byte(`"$recursive`),
	[]byte(`"$defs"`), []byte(`"definitions"`), []byte(`"$schema"`),
}

// Keywords whose values are subschemas, by the shape of the value. Others
// (if, contains, ...) are compared and kept as plain values.
var (
	schemaMapKeywords  = map[string]bool{"properties": true, "patternProperties": true}
	schemaKeywords     = map[string]bool{"items": true, "additionalProperties": true, "not": true}
	schemaListKeywords = map[string]bool{"anyOf": true, "oneOf": true, "allOf": true, "prefixItems": true, "items": true}
)

// number numbers m and its subschemas, bottom up (a subschema's number
// is below its parents'): m is identified by its keywords and values with
// each subschema written as that subschema's number, so that every part
// of the schema is written once.
func (b *sharedBatch) number(m map[string]any) int {
	b.depth++
	defer func() { b.depth-- }()
	if len(b.bufs) < b.depth {
		b.bufs = append(b.bufs, nil)
		b.keys = append(b.keys, nil)
	}
	keys := b.keys[b.depth-1][:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf := b.bufs[b.depth-1][:0]
	leaf := true
	for _, k := range keys {
		buf = append(appendString(buf, k), ':')
		buf = append(b.appendKeyword(buf, k, m[k], &leaf), ',')
	}
	b.bufs[b.depth-1], b.keys[b.depth-1] = buf, keys
	id, ok := b.ids[string(buf)]
	if !ok {
		id = len(b.count)
		b.ids[string(buf)] = id
		b.count = append(b.count, 0)
		b.leaf = append(b.leaf, leaf)
	}
	b.count[id]++
	b.byMap[reflect.ValueOf(m).Pointer()] = id
	return id
}

// appendKeyword writes the value v of keyword k as number keys it, each
// subschema (as eachSubschema finds them) numbered and written as its
// number; leaf is cleared when there is one.
func (b *sharedBatch) appendKeyword(buf []byte, k string, v any, leaf *bool) []byte {
	sub := func(buf []byte, x any) []byte {
		if m, ok := x.(map[string]any); ok {
			*leaf = false
			return appendValue(buf, subschemaNumber(b.number(m)))
		}
		return appendValue(buf, x)
	}
	switch t := v.(type) {
	case map[string]any:
		switch {
		case schemaKeywords[k]:
			return sub(buf, t)
		case schemaMapKeywords[k]:
			buf = append(buf, '{')
			for _, name := range slices.Sorted(maps.Keys(t)) {
				buf = append(appendString(buf, name), ':')
				buf = append(sub(buf, t[name]), ',')
			}
			return append(buf, '}')
		}
	case []any:
		if schemaListKeywords[k] {
			buf = append(buf, '[')
			for _, x := range t {
				buf = append(sub(buf, x), ',')
			}
			return append(buf, ']')
		}
	}
	return appendValue(buf, v)
}

// subschemaNumber stands for a numbered subschema in a key: no value
// json.Unmarshal makes is of this type.
type subschemaNumber int

// appendValue writes v (a JSON value, or a subschemaNumber) to buf, one
// way for each value: map keys in order.
func appendValue(buf []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(buf, "null"...)
	case bool:
		return strconv.AppendBool(buf, t)
	case float64:
		return strconv.AppendFloat(buf, t, 'g', -1, 64)
	case string:
		return appendString(buf, t)
	case subschemaNumber:
		buf = append(buf, '#')
		return strconv.AppendInt(buf, int64(t), 10)
	case []any:
		buf = append(buf, '[')
		for _, x := range t {
			buf = append(appendValue(buf, x), ',')
		}
		return append(buf, ']')
	case map[string]any:
		buf = append(buf, '{')
		for _, k := range slices.Sorted(maps.Keys(t)) {
			buf = append(appendString(buf, k), ':')
			buf = append(appendValue(buf, t[k]), ',')
		}
		return append(buf, '}')
	}
	// json.Unmarshal makes none of these: as JSON, marked apart.
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Appendf(buf, "%T:%#v", v, v)
	}
	return append(append(buf, '~'), data...)
}

// appendString writes s as its length and its bytes: as unambiguous as a
// quoted string, without looking at each rune (an imported schema's
// descriptions are most of its bytes).
func appendString(buf []byte, s string) []byte {
	buf = append(strconv.AppendInt(append(buf, '"'), int64(len(s)), 10), ':')
	return append(buf, s...)
}

// newCompiler is the compiler of parameter schemas: draft 2020-12 unless
// a schema says otherwise, and no schema loaded from outside it. The
// library's default loader reads file: URLs, so that a caller's schema
// with "$ref": "file:///etc/passwd" had the engine open the file (and
// quote its first byte in the error); the drafts' metaschemas are the
// library's own, loaded without it.
func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	return c
}

type noLoader struct{}

func (noLoader) Load(string) (any, error) {
	return nil, errors.New("the engine loads no schema from a file or a URL: a $ref must point inside the schema")
}

// compilePlain compiles root as it is, nothing shared: its errors are
// those of the schema as written. Under a URN of its own, as a batch's: a
// relative name is a file of the working directory, which the errors
// (a $ref cycle, found as a call is validated) named to the caller.
func compilePlain(root map[string]any) (*jsonschema.Schema, error) {
	c := newCompiler()
	if err := c.AddResource(plainURL, root); err != nil {
		return nil, err
	}
	return c.Compile(plainURL)
}

// plainURL is the resource compilePlain compiles a schema as.
const plainURL = "urn:blindexec:parameters.json"

// batchURL is the resource a batch's schemas are compiled in.
const batchURL = "urn:blindexec:parameters"

// compile compiles one schema given to add.
func (b *sharedBatch) compile(root map[string]any) (*jsonschema.Schema, error) {
	s := b.compileAll([]map[string]any{root})[0]
	if s == nil {
		return nil, errors.New("not compiled")
	}
	return s, nil
}

// compileAll compiles the schemas given to add (nil where one did not
// decode: its result is nil too). They and every repeated subschema
// that has subschemas of its own go under the $defs of one resource, each
// place of a repeated one refers to it: the compiler checks the resource
// against the metaschema once, and compiles each subschema once. One
// schema the metaschema refuses fails them all (nil): Validate then
// compiles each alone.
func (b *sharedBatch) compileAll(roots []map[string]any) []*jsonschema.Schema {
	out := make([]*jsonschema.Schema, len(roots))
	b.built = make([]map[string]any, len(b.count))
	b.defs = map[string]any{}
	names := make([]string, len(roots))
	for i, root := range roots {
		switch {
		case root == nil:
		case b.plain[reflect.ValueOf(root).Pointer()]:
			// Its references resolve within it.
			out[i], _ = compilePlain(root)
		default:
			names[i] = "p" + strconv.Itoa(i)
			b.defs[names[i]] = b.rebuild(root)
		}
	}
	if len(b.defs) == 0 {
		return out
	}
	c := newCompiler()
	if err := c.AddResource(batchURL, map[string]any{"$defs": b.defs}); err != nil {
		return out
	}
	for i, name := range names {
		if name == "" {
			continue
		}
		var err error
		out[i], err = c.Compile(batchURL + "#/$defs/" + name)
		if _, refused := err.(*jsonschema.SchemaValidationError); refused {
			return out // and each Compile would check the whole resource again
		}
	}
	return out
}

// rebuild copies m with each repeated subschema that has subschemas
// replaced by a reference to its entry in b.defs, which it fills.
func (b *sharedBatch) rebuild(m map[string]any) map[string]any {
	out := maps.Clone(m)
	for k, v := range m {
		out[k] = eachSubschema(k, v, func(sub map[string]any) any {
			id := b.byMap[reflect.ValueOf(sub).Pointer()]
			if b.built[id] == nil {
				b.built[id] = b.rebuild(sub)
			}
			if b.count[id] < 2 || b.leaf[id] {
				return b.built[id]
			}
			name := "s" + strconv.Itoa(id)
			b.defs[name] = b.built[id]
			return map[string]any{"$ref": "#/$defs/" + name}
		})
	}
	return out
}

// eachSubschema returns the value v of keyword k with each of its
// subschemas (the objects at a subschema's place) replaced by f's result;
// a value without subschemas is returned as it is.
func eachSubschema(k string, v any, f func(map[string]any) any) any {
	switch t := v.(type) {
	case map[string]any:
		switch {
		case schemaKeywords[k]:
			return f(t)
		case schemaMapKeywords[k]:
			out := make(map[string]any, len(t))
			for name, sub := range t {
				out[name] = sub
				if sm, ok := sub.(map[string]any); ok {
					out[name] = f(sm)
				}
			}
			return out
		}
	case []any:
		if schemaListKeywords[k] {
			out := make([]any, len(t))
			for i, sub := range t {
				out[i] = sub
				if sm, ok := sub.(map[string]any); ok {
					out[i] = f(sm)
				}
			}
			return out
		}
	}
	return v
}

// DropCompiled empties the cache of compiled schemas: for benchmarks of
// a first compilation, as a new process or a new import makes.
func DropCompiled() {
	compiled.Lock()
	compiled.m = nil
	compiled.Unlock()
}
