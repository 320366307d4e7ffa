package plugins_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// TestWrittenSchemas: an MCP tool's inputSchema is validated as written —
// $defs and $ref followed, whatever its resolved form lost — in the
// dialects the engine accepts (2020-12 by default, draft-07 with its
// definitions, the others the validator implements); another $schema, or
// a $ref outside the schema, is refused naming it (issue 48 point 5).
func TestWrittenSchemas(t *testing.T) {
	for _, tt := range []struct {
		name, schema string
		good, bad    string // arguments
		refused      string // a part of CheckWritten's error
		dialect      bool
	}{
		{name: "2020-12 $defs", schema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"Qty":{"type":"integer","minimum":1}},"properties":{"qty":{"$ref":"#/$defs/Qty"}}}`,
			good: `{"qty":2}`, bad: `{"qty":0}`},
		{name: "no $schema is 2020-12", schema: `{"type":"object","$defs":{"Node":{"type":"object","properties":{"label":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}},"properties":{"root":{"$ref":"#/$defs/Node"}}}`,
			good: `{"root":{"children":[{"children":[{"children":[{"label":"deep"}]}]}]}}`, bad: `{"root":{"children":[{"children":[{"children":[{"label":7}]}]}]}}`},
		{name: "draft-07 definitions", schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"Code":{"type":"string","pattern":"^[A-Z]{3}$"}},"properties":{"code":{"$ref":"#/definitions/Code"}}}`,
			good: `{"code":"EUR"}`, bad: `{"code":"euro"}`},
		{name: "draft-07 over https", schema: `{"$schema":"https://json-schema.org/draft-07/schema","type":"object","properties":{"n":{"type":"integer","exclusiveMaximum":3}}}`,
			good: `{"n":2}`, bad: `{"n":3}`},
		{name: "an unknown dialect", schema: `{"$schema":"https://example.com/my-dialect","type":"object"}`, refused: "not an accepted JSON Schema dialect", dialect: true},
		{name: "a $ref to a file", schema: `{"type":"object","properties":{"p":{"$ref":"file:///etc/passwd"}}}`, refused: "loads no schema from a file or a URL"},
		{name: "not an object schema", schema: `{"type":"string"}`, refused: "type\": \"object\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := plugins.CheckWritten(json.RawMessage(tt.schema))
			var de *plugins.DialectError
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) || errors.As(err, &de) != tt.dialect {
					t.Fatalf("CheckWritten = %v, want an error containing %q", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Parameters, the model's, says nothing of the constraint: the
			// written schema is what arguments meet.
			p := &plugins.Plugin{Name: "t", Parameters: json.RawMessage(`{"type":"object"}`),
				Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: "m", ToolName: "t", InputSchema: json.RawMessage(tt.schema)}}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			var good, bad map[string]any
			json.Unmarshal([]byte(tt.good), &good)
			json.Unmarshal([]byte(tt.bad), &bad)
			if errs := p.ValidateArguments(good); len(errs) != 0 {
				t.Errorf("%s refused: %v", tt.good, errs)
			}
			if errs := p.ValidateArguments(bad); len(errs) == 0 {
				t.Errorf("%s accepted", tt.bad)
			}
			if string(p.WrittenParameters()) != tt.schema {
				t.Errorf("WrittenParameters = %s", p.WrittenParameters())
			}
			p.FixedParams = map[string]any{"x": 1} // hidden arguments: the model's form, which hides them
			if string(p.WrittenParameters()) == tt.schema {
				t.Errorf("WrittenParameters with fixed params = the written schema")
			}
		})
	}
}

// TestWrittenCycleNamesNoPath (mcp78): an MCP server's inputSchema whose
// $ref leads back to itself is refused at each call, as the validator
// finds the cycle; its message named the schema's location, which was a
// file in the engine's working directory
// ("file:///srv/blindexec/parameters.json#/$defs/a"): the caller and the
// model read where the engine runs. Now it names the schema's own
// location only.
func TestWrittenCycleNamesNoPath(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	p := &plugins.Plugin{Name: "t", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`),
		Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: "s1", ToolName: "t",
			InputSchema: json.RawMessage(`{"type":"object","$defs":{"a":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`)}}
	errs := p.ValidateArguments(map[string]any{"x": "y"})
	if len(errs) == 0 {
		t.Fatal("a cycle validated")
	}
	for _, e := range errs {
		if strings.Contains(e.Message, wd) || strings.Contains(e.Message, "file://") {
			t.Errorf("the refusal names where the engine runs: %s", e.Message)
		}
	}
}
