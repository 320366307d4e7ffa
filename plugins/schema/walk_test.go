package schema

import (
	"encoding/json"
	"testing"
)

// TestForLLMRenamesOnlyTheKeyword: oneOf becomes anyOf where it is a
// keyword of a schema object, at any depth; a property or a definition
// called oneOf, and oneOf inside a value, stay as they are.
func TestForLLMRenamesOnlyTheKeyword(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"the keyword", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `{"anyOf":[{"type":"string"},{"type":"integer"}]}`},
		{"in a property", `{"properties":{"a":{"oneOf":[{"type":"string"}]}}}`, `{"properties":{"a":{"anyOf":[{"type":"string"}]}}}`},
		{"a property called oneOf", `{"properties":{"oneOf":{"type":"string"}}}`, `{"properties":{"oneOf":{"type":"string"}}}`},
		{"a property called oneOf holding the keyword", `{"properties":{"oneOf":{"oneOf":[{"type":"string"}]}}}`, `{"properties":{"oneOf":{"anyOf":[{"type":"string"}]}}}`},
		{"a definition called oneOf", `{"$defs":{"oneOf":{"type":"string"}}}`, `{"$defs":{"oneOf":{"type":"string"}}}`},
		{"in a definition", `{"$defs":{"a":{"oneOf":[{"type":"string"}]}}}`, `{"$defs":{"a":{"anyOf":[{"type":"string"}]}}}`},
		{"in items", `{"items":{"oneOf":[{"type":"string"}]}}`, `{"items":{"anyOf":[{"type":"string"}]}}`},
		{"in a default", `{"default":{"oneOf":[1]}}`, `{"default":{"oneOf":[1]}}`},
		{"in an enum", `{"enum":[{"oneOf":[1]}]}`, `{"enum":[{"oneOf":[1]}]}`},
		{"beside anyOf", `{"anyOf":[{"type":"string"}],"oneOf":[{"type":"integer"}]}`, `{"anyOf":[{"type":"string"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var in any
			if err := json.Unmarshal([]byte(c.in), &in); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(ForLLM(in))
			if string(got) != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
			if again, _ := json.Marshal(in); string(again) != c.in {
				t.Errorf("the input changed: %s", again)
			}
		})
	}
}

// TestWalkVisitsSchemasOnly: Walk reaches the schema objects under every
// subschema keyword, and never a map of names or a value.
func TestWalkVisitsSchemasOnly(t *testing.T) {
	var s map[string]any
	_ = json.Unmarshal([]byte(`{"id":"root","properties":{"id":{"id":"p"}},"$defs":{"d":{"id":"d"}},"items":[{"id":"i0"}],
		"not":{"id":"n"},"if":{"id":"if"},"dependentSchemas":{"x":{"id":"ds"}},"default":{"id":"value"},"enum":[{"id":"value"}],
		"x-ext":{"id":"value"}}`), &s)
	seen := map[string]int{}
	Walk(s, func(m map[string]any) {
		id, ok := m["id"].(string)
		if !ok {
			id = "a map of names"
		}
		seen[id]++
	})
	for _, id := range []string{"root", "p", "d", "i0", "n", "if", "ds"} {
		if seen[id] != 1 {
			t.Errorf("%s visited %d times, want once", id, seen[id])
		}
	}
	if seen["value"] != 0 || seen["a map of names"] != 0 {
		t.Errorf("values or name maps visited: %v", seen)
	}
	// Every keyword the resolver walks has a shape here.
	for _, k := range subschemaKeywords {
		if !oneSchemaKeywords[k] && !schemaListKeywords[k] && !schemaMapKeywords[k] {
			t.Errorf("subschema keyword %s has no shape", k)
		}
	}
}
