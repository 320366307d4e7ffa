package openapi

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/blindexec/blindexec/internal/jsontext"
	"github.com/blindexec/blindexec/plugins"
)

// An import's output can be far larger than its document: a component
// that many operations share is expanded into each of their plugins, so
// 0.9 MB of document — 2,000 operations sending one body of 3,000
// properties — made 2,000 plugins of 3,000 properties each and took 33 s.
// So what a document may make is bounded, before any plugin's schema is
// encoded: each plugin's parameter schema by an inline plugin's limits
// (plugins.DefaultSchemaLimits: the catalog holds no plugin that
// POST /v1/plugins would refuse), the whole import by Options.MaxBytes.

// DefaultMaxBytes is the default of Options.MaxBytes: 64 MiB, some 30
// times what the corpus's largest documents count (GitHub's 2.2 MiB,
// OpenAI's 2.1, Stripe's 1.5), and room for Microsoft Graph's 41 MiB.
// The limit is an MCP import's too (plugins.DefaultImportMaxBytes).
const DefaultMaxBytes = plugins.DefaultImportMaxBytes

// EnvMaxMB is the setting of Options.MaxBytes, in MiB, under serve and
// the CLI.
const EnvMaxMB = plugins.EnvImportMaxMB

// pluginOverhead is what an import counts for each plugin besides its
// parameter schema and texts: its row's other columns. It also bounds
// the plugins a document of path items sharing one $ref can make.
const pluginOverhead = 256

// argOverhead is what an import counts an argument at least: what it
// holds until the import is encoded besides its schema (which the
// operations that share a schema share), its placement and its entry in
// the root's properties, as map slots (more as the maps round up). A
// plugin counts the larger of its schema's bytes and its arguments'
// overhead: 2,000 operations of one body of 1,999 short fields encode 27
// bytes a field but held some 300 (1.3 GB allocated before the limit
// was passed, 257 MB now); Graph's 74,484 arguments, mostly of larger
// schemas, add 1.2 MiB to its count.
const argOverhead = int(unsafe.Sizeof("")+unsafe.Sizeof(plugins.ArgPlacement{})) + int(unsafe.Sizeof("")+unsafe.Sizeof(any(nil)))

// TooLargeError refuses a whole import: its plugins would be over
// Options.MaxBytes. Nothing of it is encoded or written.
type TooLargeError struct {
	Max        int    // the limit, in bytes
	Key        string // the operation at which the total passed it
	Operations int    // operations converted up to it, that one included
	// Listed, when set, is the selected operations listed up to Key: more
	// than the limit holds at its least a plugin, refused before any is
	// converted.
	Listed int
}

func (e *TooLargeError) Error() string {
	if e.Listed > 0 {
		return fmt.Sprintf("the document has more operations than the import's limit of %s holds at %d bytes each: "+
			"%d up to operation %s; select fewer operations (tag, path, operation id) or raise the limit",
			plugins.ImportLimitText(e.Max), pluginOverhead, e.Listed, e.Key)
	}
	return fmt.Sprintf("the document's plugins are over the import's limit of %s: the total passed it at operation %s (%d converted); "+
		"select fewer operations (tag, path, operation id) or raise the limit",
		plugins.ImportLimitText(e.Max), e.Key, e.Operations)
}

// count adds the n bytes of operation o's plugin (or failure) to the
// import's total, and refuses the import past its limit.
func (c *converter) count(o rawOperation, n int) *TooLargeError {
	if c.total += n; c.total > c.maxTotal {
		return c.tooLarge(o.key)
	}
	return nil
}

func (c *converter) tooLarge(key string) *TooLargeError {
	return &TooLargeError{Max: c.maxTotal, Key: key}
}

// checkBody looks at a request body before its fields become arguments.
// A body whose fields are over a plugin's properties even if each were
// free-form is sent whole (whole): a body that thousands of operations
// share then costs each a look-up. A body whose plugin would be within a
// plugin's limits but over the import's refuses the import. It counts
// what the plugin holds at least: a body sent whole is an argument as it
// is; a body's fields are arguments under names of a character or more
// (long ones are cut), their schemas as they are, except a multipart
// field's, which may be rewritten smaller (that body is left to the
// plugin's own count). A plugin over its limits is left to fit, which
// may reduce it below that least.
func (b *opBuilder) checkBody(s, props map[string]any, spread, multipart bool) (whole bool, err error) {
	var least size
	switch {
	case spread && multipart:
		return false, nil
	case spread:
		if len(b.args)+len(props) > b.c.limits.Properties {
			return true, nil
		}
		p := b.c.meter.measure(props, true, 0)
		least = size{bytes: p.bytes - p.keys + len(`"x":`)*len(props), depth: p.depth + 1, props: p.props, nodes: p.nodes + 1}
	default:
		least = b.c.meter.measure(s, false, 1)
	}
	for _, a := range b.args {
		least.add(b.c.meter.measure(a.schema, false, 1))
	}
	if least.over(b.c.limits) == nil && b.c.total+least.bytes > b.c.maxTotal {
		return false, b.c.tooLarge(b.key)
	}
	return false, nil
}

// PluginLimitError is an operation whose parameter schema is over an
// inline plugin's limits (plugins.DefaultSchemaLimits) even reduced (its
// parameters, not a body, are too many); the operation fails, the
// others import.
type PluginLimitError struct {
	Field string // "parameters (N)": more parameters than a plugin's properties; "parameters" otherwise
	Cost  *plugins.CostError
}

func (e *PluginLimitError) Error() string {
	return fmt.Sprintf("%s: %v (an inline plugin's limit)", e.Field, e.Cost)
}

// size is what a tree of decoded JSON costs as a parameter schema,
// counted as plugins.CheckSchemaCost counts it (the tree holds no $ref
// left to expand): the bytes of its JSON, its levels of nesting, the
// entries of its "properties" maps and its objects and arrays.
type size struct {
	bytes, depth, props, nodes int
	keys                       int // of a map: the bytes of its own keys and their colons
}

func (s *size) add(t size) {
	s.bytes += t.bytes
	s.depth = max(s.depth, t.depth)
	s.props += t.props
	s.nodes += t.nodes
}

// over returns the first of l that s exceeds, as a *plugins.CostError.
func (s size) over(l plugins.SchemaLimits) *plugins.CostError {
	switch {
	case s.bytes > l.Bytes:
		return &plugins.CostError{Limit: plugins.LimitBytes, Max: l.Bytes}
	case s.depth > l.Depth:
		return &plugins.CostError{Limit: plugins.LimitDepth, Max: l.Depth}
	case s.props > l.Properties:
		return &plugins.CostError{Limit: plugins.LimitProperties, Max: l.Properties}
	case s.nodes > l.Nodes:
		return &plugins.CostError{Limit: plugins.LimitNodes, Max: l.Nodes}
	}
	return nil
}

// meter measures trees, each map and list once: the resolver shares an
// expansion between every place (and every operation) that uses it, so
// measuring a plugin costs what is new in it. A measured value is held
// (keep) so that its address is not reused while the meter lives.
type meter struct {
	seen map[meterKey]meterEntry
	enc  treeEncoder // scalars, written to be counted
}

type meterKey struct {
	p          unsafe.Pointer
	n          int  // a list's length (lists may share an array)
	properties bool // a "properties" map, whose keys are names
}

type meterEntry struct {
	keep any
	s    size
}

func newMeter() *meter { return &meter{seen: map[meterKey]meterEntry{}} }

// measure is the size of v; properties says v is the value of a
// "properties" keyword. The top fresh levels of v are the operation's
// own, met once: they are not kept.
func (m *meter) measure(v any, properties bool, fresh int) size {
	var key meterKey
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			break
		}
		key = meterKey{p: reflect.ValueOf(t).UnsafePointer(), properties: properties}
	case []any:
		if len(t) == 0 {
			break
		}
		key = meterKey{p: unsafe.Pointer(&t[0]), n: len(t)}
	case []string: // a list the converter made (required)
		m.enc.buf = m.enc.buf[:0]
		m.enc.value(t, 0)
		if t == nil {
			return size{bytes: len(m.enc.buf)}
		}
		return size{bytes: len(m.enc.buf), depth: 1, nodes: 1}
	default:
		m.enc.buf = m.enc.buf[:0]
		if m.enc.value(v, 0) != nil {
			return size{}
		}
		return size{bytes: len(m.enc.buf)}
	}
	if fresh > 0 {
		key.p = nil
	}
	if key.p != nil {
		if e, ok := m.seen[key]; ok {
			return e.s
		}
	}
	var s size
	switch t := v.(type) {
	case map[string]any:
		s.bytes = 2 // {}
		if t == nil {
			s.bytes = len("null")
			return s
		}
		if properties {
			s.props = len(t)
		}
		for k, x := range t {
			m.enc.buf = jsontext.AppendString(m.enc.buf[:0], k)
			kb := len(m.enc.buf)
			c := m.measure(x, !properties && k == "properties", fresh-1)
			c.bytes += kb + 2 // the key, its colon and a comma
			s.add(c)
			s.keys += kb + 1
		}
		if len(t) > 0 {
			s.bytes-- // no comma after the last
		}
	case []any:
		s.bytes = 2
		if t == nil {
			s.bytes = len("null")
			return s
		}
		for _, x := range t {
			c := m.measure(x, false, fresh-1)
			c.bytes++
			s.add(c)
		}
		if len(t) > 0 {
			s.bytes--
		}
	}
	s.depth++
	s.nodes++
	if key.p != nil {
		m.seen[key] = meterEntry{keep: v, s: s}
	}
	return s
}
