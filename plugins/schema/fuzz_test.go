package schema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolve feeds arbitrary JSON as a schema and its $defs: Resolve must
// not panic or hang, and must give the same result twice.
func FuzzResolve(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/*.json")
	for _, path := range inputs {
		if strings.HasSuffix(path, ".golden.json") {
			continue
		}
		var in struct {
			Schema map[string]any `json:"schema"`
		}
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if json.Unmarshal(data, &in) != nil || in.Schema == nil {
			continue
		}
		defs, _ := json.Marshal(in.Schema["$defs"])
		delete(in.Schema, "$defs")
		schema, _ := json.Marshal(in.Schema)
		f.Add(schema, defs, byte(0))
	}
	f.Add([]byte(`{"$ref":"#/$defs/A"}`), []byte(`{"A":{"allOf":[{"$ref":"#/$defs/A"}],"anyOf":[{"$ref":"#"}]}}`), byte(7))

	f.Fuzz(func(t *testing.T, schemaJSON, defsJSON []byte, mode byte) {
		var schema map[string]any
		var defs any
		if json.Unmarshal(schemaJSON, &schema) != nil || schema == nil || json.Unmarshal(defsJSON, &defs) != nil {
			return
		}
		schema["$defs"] = defs
		opts := Options{
			MaxDepth:  int(mode%4) + 1,
			MaxNodes:  2000,
			KeepRefs:  mode&4 != 0,
			Raw:       mode&8 != 0,
			Strict:    mode&16 != 0,
			Direction: Direction(mode>>5) % 3,
		}
		first, err1 := Resolve(schema, nil, opts)
		second, err2 := Resolve(schema, nil, opts)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v, %v", err1, err2)
		}
		a, err := json.Marshal(first)
		if err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		if b, _ := json.Marshal(second); string(a) != string(b) {
			t.Fatalf("results differ:\n%s\n%s", a, b)
		}
	})
}

// FuzzPropertyNames feeds arbitrary JSON as a response schema, references
// and cycles included: PropertyNames must not panic or hang, keeps to its
// bound, and gives the same names twice.
func FuzzPropertyNames(f *testing.F) {
	f.Add([]byte(`{"$ref":"#/$defs/A","$defs":{"A":{"properties":{"a":{"$ref":"#/$defs/A"}},"allOf":[{"$ref":"#"}]}}}`))
	f.Add([]byte(`{"items":{"items":{"anyOf":[{"properties":{"x":{"properties":{"y":{}}}}}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var root map[string]any
		if json.Unmarshal(data, &root) != nil || root == nil {
			return
		}
		first := PropertyNames(root, JSONSchemaLookup(root))
		if len(first) > maxPropertyNames {
			t.Fatalf("%d names, bound %d", len(first), maxPropertyNames)
		}
		for _, name := range first {
			if len(name) > maxPropertyName {
				t.Fatalf("a name of %d bytes, bound %d", len(name), maxPropertyName)
			}
		}
		if second := PropertyNames(root, JSONSchemaLookup(root)); strings.Join(first, "\x00") != strings.Join(second, "\x00") {
			t.Fatalf("names differ: %q, %q", first, second)
		}
	})
}
