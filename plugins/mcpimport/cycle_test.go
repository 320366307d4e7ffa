package mcpimport_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/plugins/mcpimport"
)

// TestCycleInPlaceKeptResolved: a tool whose inputSchema has a $ref that
// leads back to itself without reading into the arguments (to "#" through
// allOf, a $defs entry naming itself, a property's schema naming itself)
// is imported resolved only, with a warning naming the $ref: its calls are
// validated against the pruned form the model reads, where as written the
// validator refused every value reaching the cycle (mcp78's leftover,
// small79). A $ref that reads into the arguments (a tree) is kept written.
func TestCycleInPlaceKeptResolved(t *testing.T) {
	for _, tt := range []struct {
		name, schema, ref string
		args              map[string]any
	}{
		{"itself through allOf", `{"type":"object","properties":{"q":{"type":"string"}},"allOf":[{"$ref":"#"}]}`, `"#"`, map[string]any{"q": "x"}},
		{"itself as a whole", `{"type":"object","properties":{"q":{"type":"string"}},"anyOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"$ref":"#"}}}`, `"#"`, map[string]any{"q": "x"}},
		{"a property's schema", `{"type":"object","properties":{"q":{"type":"string"},"x":{"$ref":"#/$defs/a"}},"$defs":{"a":{"$ref":"#/$defs/a"}}}`, `"#/$defs/a"`, map[string]any{"q": "x", "x": "y"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var in map[string]any
			if err := json.Unmarshal([]byte(tt.schema), &in); err != nil {
				t.Fatal(err)
			}
			p, warnings, err := mcpimport.Convert(mcpimport.Server{ID: "s1", Name: "s"}, &sdk.Tool{Name: "find", InputSchema: in}, "find", 0)
			if err != nil {
				t.Fatal(err)
			}
			if p.Execution.InputSchema != nil || !slices.ContainsFunc(warnings, func(w string) bool {
				return strings.Contains(w, "$ref "+tt.ref) && strings.Contains(w, "listed as resolved")
			}) {
				t.Errorf("kept written %s, warnings %q", p.Execution.InputSchema, warnings)
			}
			if errs := p.ValidateArguments(tt.args); len(errs) != 0 {
				t.Errorf("a call refused: %v", errs)
			}
			if errs := p.ValidateArguments(map[string]any{"q": 1}); len(errs) == 0 {
				t.Error("a call whose q is no string validated")
			}
		})
	}
	tree := `{"type":"object","properties":{"node":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}}}}}}`
	var in map[string]any
	if err := json.Unmarshal([]byte(tree), &in); err != nil {
		t.Fatal(err)
	}
	if _, written, warnings, err := mcpimport.Schemas(in, 0); err != nil || written == nil {
		t.Errorf("a tree: written %s, warnings %q, err %v", written, warnings, err)
	}
}
