package plugins

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/blindexec/blindexec/internal/jsonlimit"
)

// SchemaLimits bound the cost of a parameter schema that arrives from
// outside: an inline plugin of a request, an MCP tool's inputSchema met at
// import or tools/list. Compiling, converting and validating a schema
// costs in proportion to its expanded size (a schema of 40,000 properties
// took 16 s to compile, 150,000 over 2 minutes and 650 MB), so a schema is
// measured, with its local $refs expanded as the resolver expands them,
// before any of that.
type SchemaLimits struct {
	Bytes         int // the schema's JSON; its texts (names, strings) again with $refs expanded
	Depth         int // nesting of JSON objects and arrays, $refs expanded
	Properties    int // entries of every "properties", $refs expanded
	RefExpansions int // local $refs followed
	Nodes         int // objects and arrays visited, $refs expanded
}

// DefaultSchemaLimits are the limits of CheckSchemaCost.
var DefaultSchemaLimits = SchemaLimits{
	Bytes:         1 << 20,
	Depth:         64,
	Properties:    2_000,
	RefExpansions: 2_000,
	Nodes:         100_000,
}

// Names of the limits in a CostError.
const (
	LimitBytes         = "bytes"
	LimitDepth         = "depth"
	LimitProperties    = "properties"
	LimitRefExpansions = "$ref expansions"
	LimitNodes         = "nodes"
)

// CostError is a schema over one of the SchemaLimits.
type CostError struct {
	Limit string // one of the Limit names
	Max   int
}

func (e *CostError) Error() string {
	switch e.Limit {
	case LimitBytes:
		return fmt.Sprintf("the schema is over the limit of %d bytes", e.Max)
	case LimitDepth:
		return fmt.Sprintf("the schema nests deeper than the limit of %d levels", e.Max)
	}
	return fmt.Sprintf("the schema has more than the limit of %d %s", e.Max, e.Limit)
}

// CheckSchemaCost measures a schema against DefaultSchemaLimits and
// returns a *CostError for the first limit it exceeds. The bytes and the
// raw depth are checked before decoding; the rest walks the decoded schema
// with its local $refs ("#/...") expanded, a $ref already being expanded
// on the way down (a cycle) not followed again, and stops at the first
// limit: the check costs at most the limits themselves.
func CheckSchemaCost(raw []byte) error {
	l := DefaultSchemaLimits
	if len(raw) > l.Bytes {
		return &CostError{Limit: LimitBytes, Max: l.Bytes}
	}
	if err := jsonlimit.Check(raw, jsonlimit.Limits{Depth: l.Depth}); err != nil {
		return &CostError{Limit: LimitDepth, Max: l.Depth}
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil // not JSON: the parser says so
	}
	return checkDecoded(doc)
}

// CheckSchemaCostValue is CheckSchemaCost for a schema already decoded
// (as encoding/json decodes into any) from size bytes of JSON.
func CheckSchemaCostValue(size int, doc any) error {
	if l := DefaultSchemaLimits; size > l.Bytes {
		return &CostError{Limit: LimitBytes, Max: l.Bytes}
	}
	return checkDecoded(doc)
}

func checkDecoded(doc any) error {
	w := costWalk{root: doc, l: DefaultSchemaLimits, active: map[string]bool{}}
	return w.walk(doc, 0, false, true)
}

type costWalk struct {
	root               any
	l                  SchemaLimits
	props, refs, nodes int
	// text is the bytes of the names and strings met where the schema is
	// used, $refs expanded: a description of 900 kB that 1,000
	// properties $ref made an MCP tool's parameters of 920 MB (2.7 GB
	// allocated) before the resolved form's size was checked.
	text   int
	active map[string]bool // $refs being expanded on the current path
}

// walk measures v; counted says its texts count (not where $defs or
// definitions define them: they count where used).
func (w *costWalk) walk(v any, depth int, inProperties, counted bool) error {
	switch t := v.(type) {
	case string:
		return w.count(counted, len(t))
	case map[string]any:
		if err := w.enter(depth); err != nil {
			return err
		}
		if inProperties {
			w.props += len(t)
			if w.props > w.l.Properties {
				return &CostError{Limit: LimitProperties, Max: w.l.Properties}
			}
		}
		if ref, ok := t["$ref"].(string); ok && !inProperties && strings.HasPrefix(ref, "#") && !w.active[ref] {
			target, ok := pointer(w.root, ref[1:])
			if ok {
				w.refs++
				if w.refs > w.l.RefExpansions {
					return &CostError{Limit: LimitRefExpansions, Max: w.l.RefExpansions}
				}
				w.active[ref] = true
				err := w.walk(target, depth, false, true)
				delete(w.active, ref)
				if err != nil {
					return err
				}
			}
		}
		for k, x := range t {
			// Under "properties" the keys are names, whose values are
			// schemas; elsewhere keywords ("$defs" included: definitions
			// are walked where they are defined, and again where used).
			if err := w.count(counted, len(k)); err != nil {
				return err
			}
			defs := !inProperties && (k == "$defs" || k == "definitions")
			if err := w.walk(x, depth+1, !inProperties && k == "properties", counted && !defs); err != nil {
				return err
			}
		}
	case []any:
		if err := w.enter(depth); err != nil {
			return err
		}
		for _, x := range t {
			if err := w.walk(x, depth+1, false, counted); err != nil {
				return err
			}
		}
	}
	return nil
}

// count adds n bytes of text, when counted, against the limit of bytes.
func (w *costWalk) count(counted bool, n int) error {
	if !counted {
		return nil
	}
	if w.text += n; w.text > w.l.Bytes {
		return &CostError{Limit: LimitBytes, Max: w.l.Bytes}
	}
	return nil
}

func (w *costWalk) enter(depth int) error {
	if depth >= w.l.Depth {
		return &CostError{Limit: LimitDepth, Max: w.l.Depth}
	}
	w.nodes++
	if w.nodes > w.l.Nodes {
		return &CostError{Limit: LimitNodes, Max: w.l.Nodes}
	}
	return nil
}

// pointer resolves a JSON pointer ("/$defs/a") in doc.
func pointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if ptr[0] != '/' {
		return nil, false
	}
	cur := doc
	for tok := range strings.SplitSeq(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := cur.(type) {
		case map[string]any:
			x, ok := t[tok]
			if !ok {
				return nil, false
			}
			cur = x
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			cur = t[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
