package plugins

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/blindexec/blindexec/plugins/schema"
)

// AcceptedDialects are the JSON Schema dialects an MCP tool's inputSchema
// may name in $schema (issue 48 point 5): 2020-12, MCP's default when
// $schema is absent, and the earlier drafts the validator implements.
// Any other $schema is refused, since the engine loads no metaschema from
// outside.
var AcceptedDialects = []string{
	"https://json-schema.org/draft/2020-12/schema",
	"https://json-schema.org/draft/2019-09/schema",
	"http://json-schema.org/draft-07/schema",
	"http://json-schema.org/draft-06/schema",
	"http://json-schema.org/draft-04/schema",
}

// dialect is the accepted dialect a $schema value names: its empty
// fragment and its scheme (both http and https are written) ignored.
func dialect(v string) (string, bool) {
	bare := func(u string) string {
		return strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(u, "#"), "https://"), "http://")
	}
	for _, d := range AcceptedDialects {
		if bare(v) == bare(d) {
			return d, true
		}
	}
	return "", false
}

// DialectError refuses a schema whose $schema names a dialect the engine
// does not validate.
type DialectError struct{ Schema string }

func (e *DialectError) Error() string {
	return fmt.Sprintf("$schema %q is not an accepted JSON Schema dialect (accepted: %s)", e.Schema, strings.Join(AcceptedDialects, ", "))
}

// CheckWritten reports whether raw is a schema arguments can be validated
// against as written: a JSON object of type object in an accepted
// dialect, every $ref inside it.
// A $ref that leads back to itself without reading into the arguments
// is refused too: the validator refuses every value that reaches it
// ("causing reference cycle"), so the import keeps such a tool in the
// resolved form, where the cycle is pruned (small79).
func CheckWritten(raw json.RawMessage) error {
	if _, err := writtenSchema(raw); err != nil {
		return err
	}
	root, err := decodeParameters(raw, nil)
	if err != nil {
		return err
	}
	if ref, ok := cycleInPlace(root); ok {
		return fmt.Errorf("$ref %q leads back to itself without reading into the arguments, which no value reaching it passes", ref)
	}
	return nil
}

// Keywords whose subschemas apply to the value their schema applies to
// (the instance does not move), by the shape of their value.
var (
	inPlaceOne  = []string{"not", "if", "then", "else"}
	inPlaceList = []string{"allOf", "anyOf", "oneOf"}
	inPlaceMap  = []string{"dependentSchemas", "dependencies"}
	// movingOne, movingList and movingMap apply to a part of the value.
	movingOne  = []string{"items", "additionalItems", "additionalProperties", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties"}
	movingList = []string{"items", "prefixItems"}
	movingMap  = []string{"properties", "patternProperties"}
)

// cycleInPlace is a local $ref reachable from root that leads back to a
// schema being applied to the same value: a cycle through $ref and the
// in-place applicators only, one the validator meets without the instance
// moving. Every schema is applied from a node the instance moved to (or
// the root), depth first over in-place edges; the colours make it linear.
func cycleInPlace(root map[string]any) (string, bool) {
	lookup := schema.JSONSchemaLookup(root)
	const (
		open = iota + 1
		closed
	)
	colour := map[uintptr]int{} // by the map's identity: a $ref reaches the very node
	key := func(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }
	var (
		moved []map[string]any
		found string
		cycle bool
	)
	var apply func(m map[string]any, via string)
	apply = func(m map[string]any, via string) {
		switch colour[key(m)] {
		case open:
			found, cycle = via, true
			return
		case closed:
			return
		}
		colour[key(m)] = open
		inPlace := func(v any, via string) {
			if sub, ok := v.(map[string]any); ok && !cycle {
				apply(sub, via)
			}
		}
		if ref, ok := m["$ref"].(string); ok {
			if target, ok := lookup(ref); ok {
				inPlace(target, ref)
			}
		}
		for _, k := range inPlaceOne {
			inPlace(m[k], via)
		}
		for _, k := range inPlaceList {
			list, _ := m[k].([]any)
			for _, v := range list {
				inPlace(v, via)
			}
		}
		for _, k := range inPlaceMap {
			byName, _ := m[k].(map[string]any)
			for _, v := range byName {
				inPlace(v, via)
			}
		}
		colour[key(m)] = closed
		for _, k := range movingOne {
			if sub, ok := m[k].(map[string]any); ok {
				moved = append(moved, sub)
			}
		}
		for _, k := range movingList {
			list, _ := m[k].([]any)
			for _, v := range list {
				if sub, ok := v.(map[string]any); ok {
					moved = append(moved, sub)
				}
			}
		}
		for _, k := range movingMap {
			byName, _ := m[k].(map[string]any)
			for _, v := range byName {
				if sub, ok := v.(map[string]any); ok {
					moved = append(moved, sub)
				}
			}
		}
	}
	moved = append(moved, root)
	for len(moved) > 0 && !cycle {
		m := moved[len(moved)-1]
		moved = moved[:len(moved)-1]
		apply(m, "")
	}
	return found, cycle
}

// writtenSchema compiles an inputSchema as written (cached by its bytes).
func writtenSchema(raw json.RawMessage) (*compiledSchema, error) {
	const variant = "written"
	compiled.RLock()
	c := compiled.m[variant][string(raw)]
	compiled.RUnlock()
	if c != nil {
		return c, nil
	}
	root, err := decodeParameters(raw, nil)
	if err != nil {
		return nil, err
	}
	if v, ok := root["$schema"]; ok {
		str, _ := v.(string)
		d, ok := dialect(str)
		if !ok {
			return nil, &DialectError{Schema: str}
		}
		root["$schema"] = d // the validator's own spelling of it
	}
	simple := simpleOf(root)
	s, err := compilePlain(root)
	if err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %v", err)
	}
	return cache(variant, raw, s, simple), nil
}

// WrittenParameters is the schema an MCP client's tools/list carries: the
// inputSchema as its server wrote it, when the plugin has one and no
// fixed_params hide some of its arguments; else what the model reads.
func (p *Plugin) WrittenParameters() json.RawMessage {
	if len(p.Execution.InputSchema) > 0 && len(p.FixedParams) == 0 {
		return p.Execution.InputSchema
	}
	return p.LLMParameters(nil)
}
