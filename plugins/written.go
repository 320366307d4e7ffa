package plugins

import (
	"encoding/json"
	"fmt"
	"strings"
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
func CheckWritten(raw json.RawMessage) error {
	_, err := writtenSchema(raw)
	return err
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
