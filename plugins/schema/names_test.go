package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestPropertyNames: the names of what a schema describes, outer levels
// first, through references, arrays and compositions, to three levels
// and at most maxPropertyNames names.
func TestPropertyNames(t *testing.T) {
	many := map[string]any{}
	for i := range maxPropertyNames + 5 {
		many[fmt.Sprintf("p%03d", i)] = map[string]any{"type": "string"}
	}
	manyJSON, _ := json.Marshal(map[string]any{"type": "object", "properties": many})
	for _, tc := range []struct {
		name, schema string
		want         string
	}{
		{"an object's names, sorted", `{"type":"object","properties":{"b":{},"a":{}}}`, "a b"},
		{"a wrapper, its array, the item's names (Xero's invoices)",
			`{"$ref":"#/$defs/Invoices","$defs":{"Invoices":{"properties":{"Invoices":{"type":"array","items":{"$ref":"#/$defs/Invoice"}}}},
			"Invoice":{"properties":{"AmountDue":{},"Contact":{"$ref":"#/$defs/Contact"}}},"Contact":{"properties":{"Name":{"properties":{"deep":{}}}}}}}`,
			"Invoices AmountDue Contact Name"},
		{"allOf, oneOf, anyOf", `{"allOf":[{"properties":{"a":{}}},{"oneOf":[{"properties":{"b":{}}}]}],"anyOf":[{"properties":{"c":{}}}]}`, "a b c"},
		{"a cycle ends", `{"$ref":"#/$defs/Node","$defs":{"Node":{"properties":{"next":{"$ref":"#/$defs/Node"},"value":{}}}}}`, "next value"},
		{"an unresolvable reference is nothing", `{"properties":{"a":{"$ref":"#/nowhere"}}}`, "a"},
		{"a scalar answers no names", `{"type":"string"}`, ""},
		{"a name over 64 bytes is left out", `{"properties":{"` + strings.Repeat("x", 65) + `":{},"` + strings.Repeat("y", 64) + `":{}}}`, strings.Repeat("y", 64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var root map[string]any
			if err := json.Unmarshal([]byte(tc.schema), &root); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(PropertyNames(root, JSONSchemaLookup(root)), " "); got != tc.want {
				t.Errorf("PropertyNames = %q, want %q", got, tc.want)
			}
		})
	}
	var root map[string]any
	_ = json.Unmarshal(manyJSON, &root)
	if got := PropertyNames(root, JSONSchemaLookup(root)); len(got) != maxPropertyNames || !slices.IsSorted(got) {
		t.Errorf("%d names kept of %d, want the first %d", len(got), len(many), maxPropertyNames)
	}
}
