package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Each case reads testdata/NAME.json, {"schema": ..., "document": ...}, and
// compares the result with testdata/NAME.golden.json. References resolve
// into the document with OpenAPILookup if there is one, else into the schema.
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		opts Options
	}{
		{"simple", Options{}},
		{"mcp_defs", Options{MaxDepth: 3}},
		{"tree", Options{MaxDepth: 3}},
		{"mutual", Options{MaxDepth: 3}},
		{"depth3", Options{MaxDepth: 3}},
		{"escaped", Options{}},
		{"nullable30", Options{}},
		{"keyword_names", Options{}}, // properties called nullable, oneOf, type, properties
		{"typearrays31", Options{}},
		{"oneof", Options{}},
		{"allof", Options{}},
		{"readonly_request", Options{Direction: Request}},
		{"broken_property", Options{}},
		{"keeprefs", Options{KeepRefs: true, Raw: true}},
		{"strict", Options{Strict: true}},
		{"keywords", Options{}},
		{"tree_strict", Options{MaxDepth: 3, Strict: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			input := c.name
			if input == "tree_strict" {
				input = "tree"
			}
			var in struct {
				Schema   any            `json:"schema"`
				Document map[string]any `json:"document"`
			}
			readJSON(t, filepath.Join("testdata", input+".json"), &in)
			var lookup Lookup
			if in.Document != nil {
				lookup = OpenAPILookup(in.Document)
			}
			res, err := Resolve(in.Schema, lookup, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(map[string]any{
				"schema":     res.Schema,
				"components": res.Components,
				"warnings":   res.Warnings,
			}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", c.name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs (rerun with -update to accept):\n%s", golden, got)
			}
		})
	}
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
