package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPointerLookup(t *testing.T) {
	doc := decode(t, `{
		"components": {"schemas": {"a/b": 1, "c~d": 2, "e f": 3, "%": 4}},
		"list": [10, 11],
		"$defs": {"X": 5}
	}`)
	tests := []struct {
		ref  string
		want any // nil: not found
	}{
		{"#/components/schemas/a~1b", 1.0},
		{"#/components/schemas/c~0d", 2.0},
		{"#/components/schemas/e%20f", 3.0},
		{"#/components/schemas/%25", 4.0},
		{"#/list/1", 11.0},
		{"#/list/2", nil},
		{"#/list/-1", nil},
		{"#/list/x", nil},
		{"#/$defs/X", 5.0},
		{"#/%24defs/X", 5.0},
		{"#/components/schemas/missing", nil},
		{"#/components/schemas/a~1b/deeper", nil},
		{"#/components/schemas/bad%zz", nil},
		{"#anchor", nil},
		{"other.json#/components", nil},
	}
	lookup := OpenAPILookup(doc)
	for _, tt := range tests {
		got, ok := lookup(tt.ref)
		if ok != (tt.want != nil) || ok && got != tt.want {
			t.Errorf("lookup(%q) = %v, %v; want %v", tt.ref, got, ok, tt.want)
		}
	}
	if got, ok := lookup("#"); !ok || !reflect.DeepEqual(got, doc) {
		t.Errorf(`lookup("#") = %v, %v; want the document`, got, ok)
	}
}

func TestJSONSchemaLookupID(t *testing.T) {
	root := decode(t, `{"$id": "https://example.com/s.json", "$defs": {"X": {"type": "string"}}}`)
	lookup := JSONSchemaLookup(root)
	for ref, want := range map[string]bool{
		"#/$defs/X":                           true,
		"https://example.com/s.json#/$defs/X": true,
		"https://example.com/s.json":          true,
		"https://other.com/s.json#/$defs/X":   false,
		"X":                                   false,
	} {
		if _, ok := lookup(ref); ok != want {
			t.Errorf("lookup(%q) found = %v, want %v", ref, ok, want)
		}
	}
}

func TestDeref(t *testing.T) {
	doc := decode(t, `{"components": {
		"parameters": {"a": {"$ref": "#/components/parameters/b"}, "b": {"name": "limit", "in": "query"}},
		"requestBodies": {"loop": {"$ref": "#/components/requestBodies/loop"}}
	}}`)
	lookup := OpenAPILookup(doc)
	got, err := lookup.Deref(map[string]any{"$ref": "#/components/parameters/a"})
	if err != nil || got.(map[string]any)["name"] != "limit" {
		t.Errorf("Deref(a) = %v, %v", got, err)
	}
	var re *RefError
	_, err = lookup.Deref(map[string]any{"$ref": "#/components/parameters/none"})
	if !errors.As(err, &re) || re.Ref != "#/components/parameters/none" || re.Cyclic {
		t.Errorf("Deref(none) error = %v", err)
	}
	_, err = lookup.Deref(map[string]any{"$ref": "#/components/requestBodies/loop"})
	if !errors.As(err, &re) || !re.Cyclic {
		t.Errorf("Deref(loop) error = %v, want a cyclic RefError", err)
	}
}

func TestResolveErrors(t *testing.T) {
	var re *RefError
	_, err := Resolve(map[string]any{"$ref": "#/$defs/Missing"}, nil, Options{})
	if !errors.As(err, &re) || re.Ref != "#/$defs/Missing" {
		t.Errorf("root ref error = %v, want *RefError", err)
	}
	for _, in := range []any{nil, "string", []any{}, 1.0} {
		if _, err := Resolve(in, nil, Options{}); err == nil {
			t.Errorf("Resolve(%v) succeeded, want an error", in)
		}
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		in       string
		want     string
		warnings []string
	}{
		{
			name: "empty tool parameters become an object",
			opts: Options{Parameters: true},
			in:   `{}`,
			want: `{"type":"object"}`,
		},
		{
			name: "an empty schema that is not a tool's parameters stays any value",
			in:   `{}`,
			want: `{}`,
		},
		{
			// FastAPI's enum query parameter with a default.
			name: "a wrapped reference keeps its type, enum and siblings",
			in:   `{"allOf":[{"$ref":"#/$defs/Sort"}],"default":"name","$defs":{"Sort":{"title":"Sort","enum":["name","date"],"type":"string","description":"An enumeration."}}}`,
			want: `{"default":"name","enum":["name","date"],"type":"string","title":"Sort","description":"An enumeration."}`,
		},
		{
			name: "a wrapped reference as tool parameters is not forced to an object",
			opts: Options{Parameters: true},
			in:   `{"allOf":[{"$ref":"#/$defs/O"}],"$defs":{"O":{"type":"object","properties":{"a":{"type":"string"}}}}}`,
			want: `{"type":"object","properties":{"a":{"type":"string"}}}`,
		},
		{
			name: "oneOf with a discriminator requires the discriminator's const in each alternative",
			in: `{"type":"object","properties":{"pet":{"oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}],"discriminator":{"propertyName":"kind","mapping":{"c":"#/$defs/Cat","dog":"#/$defs/Dog"}}}},
				"$defs":{"Cat":{"type":"object","properties":{"kind":{"type":"string","enum":["c"]},"lives":{"type":"integer"}}},
				         "Dog":{"type":"object","properties":{"kind":{"type":"string"},"bark":{"type":"boolean"}},"required":["bark"]}}}`,
			want: `{"type":"object","properties":{"pet":{"oneOf":[
				{"type":"object","properties":{"kind":{"type":"string","const":"c"},"lives":{"type":"integer"}},"required":["kind"]},
				{"type":"object","properties":{"kind":{"type":"string","const":"dog"},"bark":{"type":"boolean"}},"required":["bark","kind"]}]}}}`,
		},
		{
			name: "a discriminator without mapping takes the alternative's single value, else its name",
			in: `{"oneOf":[{"$ref":"#/$defs/Cat"},{"$ref":"#/$defs/Dog"}],"discriminator":{"propertyName":"kind"},
				"$defs":{"Cat":{"type":"object","properties":{"kind":{"const":"cat"}}},"Dog":{"type":"object","properties":{"a":{"type":"string"}}}}}`,
			want: `{"oneOf":[{"type":"object","properties":{"kind":{"const":"cat"}},"required":["kind"]},
				{"type":"object","properties":{"kind":{"type":"string","const":"Dog"},"a":{"type":"string"}},"required":["kind"]}]}`,
		},
		{
			name: "example becomes examples",
			in:   `{"type":"string","example":"x"}`,
			want: `{"type":"string","examples":["x"]}`,
		},
		{
			name: "raw keeps keywords and structure",
			opts: Options{Raw: true},
			in:   `{"type":"object","x-a":1,"properties":{"p":{"oneOf":[{"$ref":"#/$defs/S"}],"nullable":true}},"$defs":{"S":{"type":"string","example":"e"}}}`,
			want: `{"type":"object","x-a":1,"properties":{"p":{"oneOf":[{"type":"string","example":"e"}],"nullable":true}}}`,
		},
		{
			name: "response direction drops writeOnly",
			opts: Options{Direction: Response},
			in:   `{"type":"object","required":["a","b"],"properties":{"a":{"type":"string","writeOnly":true},"b":{"type":"string","readOnly":true}}}`,
			want: `{"type":"object","required":["b"],"properties":{"b":{"type":"string"}}}`,
		},
		{
			name: "neutral direction keeps both",
			in:   `{"type":"object","properties":{"a":{"type":"string","writeOnly":true},"b":{"type":"string","readOnly":true}}}`,
			want: `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`,
		},
		{
			name:     "root self reference",
			opts:     Options{MaxDepth: 3},
			in:       `{"type":"object","properties":{"self":{"$ref":"#"}}}`,
			want:     `{"type":"object","properties":{"self":{"type":"object","properties":{"self":{"type":"object","description":"Truncated: recursive reference to #."}}}}}`,
			warnings: []string{"#/properties/self/properties/self: recursive reference to # pruned"},
		},
		{
			name:     "cycle of bare references",
			in:       `{"type":"object","properties":{"p":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}}}`,
			want:     `{"type":"object","properties":{"p":{"description":"Truncated: recursive reference to A."}}}`,
			warnings: []string{"#/properties/p: recursive reference to #/$defs/A pruned"},
		},
		{
			name:     "node limit",
			opts:     Options{MaxNodes: 3},
			in:       `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","properties":{"c":{"type":"string"}}},"d":{"type":"integer"}}}`,
			want:     `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","properties":{"c":{"type":"string","description":"Truncated: the schema is too large."}}},"d":{"type":"integer","description":"Truncated: the schema is too large."}}}`,
			warnings: []string{"#/properties/b/properties/c: node limit 3 reached; this and all later subschemas truncated"},
		},
		{
			name: "keep refs with normalization keeps siblings and nullability",
			opts: Options{KeepRefs: true},
			in:   `{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N","description":"next node","nullable":true}}}}}`,
			want: `{"type":"object","properties":{"n":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/N","description":"next node"},{"type":"null"}]}}}}}`,
			warnings: []string{
				"#/properties/n/properties/next: recursive reference to #/$defs/N kept as $ref",
				"#/$defs/N/properties/next: recursive reference to #/$defs/N kept as $ref",
			},
		},
		{
			name: "reference to boolean schema",
			in:   `{"type":"object","properties":{"any":{"$ref":"#/$defs/T"}},"$defs":{"T":true}}`,
			want: `{"type":"object","properties":{"any":{}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Resolve(decode(t, tt.in), nil, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := encode(t, res.Schema), encode(t, decode(t, tt.want)); got != want {
				t.Errorf("schema\n got %s\nwant %s", got, want)
			}
			if !reflect.DeepEqual(res.Warnings, tt.warnings) {
				t.Errorf("warnings\n got %q\nwant %q", res.Warnings, tt.warnings)
			}
		})
	}
}

// Memoized expansions must give exactly what expanding afresh gives, though
// the same reference with the same depth budget is cut at different places
// under different stacks: X under Z (Y expanded) and under Y (Y pruned); W
// under P (P pruned) and under Q (P expanded).
func TestMemoMatchesFreshExpansion(t *testing.T) {
	in := `{"type":"object","properties":{
		"a":  {"$ref":"#/$defs/A"},
		"b":  {"$ref":"#/$defs/B"},
		"a2": {"$ref":"#/$defs/A"},
		"c":  {"$ref":"#/$defs/C"},
		"c2": {"$ref":"#/$defs/C"},
		"m1": {"$ref":"#/$defs/Z"},
		"m2": {"$ref":"#/$defs/Y"},
		"n1": {"$ref":"#/$defs/P"},
		"n2": {"$ref":"#/$defs/Q"}
	},"$defs":{
		"Z":{"type":"object","properties":{"x":{"$ref":"#/$defs/X"}}},
		"X":{"type":"object","properties":{"y":{"$ref":"#/$defs/Y"}}},
		"Y":{"type":"object","properties":{"x":{"$ref":"#/$defs/X"}}},
		"P":{"type":"object","properties":{"w":{"$ref":"#/$defs/W"}}},
		"Q":{"type":"object","properties":{"w":{"$ref":"#/$defs/W"}}},
		"W":{"type":"object","properties":{"p":{"$ref":"#/$defs/P"}}},
		"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"},"leaf":{"$ref":"#/$defs/Leaf"}}},
		"B":{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}},
		"C":{"type":"object","properties":{"l1":{"$ref":"#/$defs/Leaf"},"l2":{"$ref":"#/$defs/Leaf"}}},
		"Leaf":{"type":"string","description":"leaf"}
	}}`
	for _, opts := range []Options{{}, {MaxDepth: 2}, {KeepRefs: true, Raw: true}} {
		whole, err := Resolve(decode(t, in), nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		// Each property resolved on its own gets no help from the memo.
		root := decode(t, in)
		for name, prop := range root["properties"].(map[string]any) {
			alone := map[string]any{"type": "object", "properties": map[string]any{name: prop}, "$defs": root["$defs"]}
			res, err := Resolve(alone, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := encode(t, whole.Schema["properties"].(map[string]any)[name])
			want := encode(t, res.Schema["properties"].(map[string]any)[name])
			if got != want {
				t.Errorf("%+v: property %s\n  in whole %s\n  alone    %s", opts, name, got, want)
			}
			for _, w := range res.Warnings {
				if !contains(whole.Warnings, w) {
					t.Errorf("%+v: warning %q missing from %q", opts, w, whole.Warnings)
				}
			}
		}
	}
}

// Fan-out through references would serialize to 10^6 nodes; MaxNodes bounds
// it even though memoized expansions are shared.
func TestNodeLimitBoundsSharedExpansions(t *testing.T) {
	defs := map[string]any{"L6": map[string]any{"type": "string"}}
	for i := 5; i >= 0; i-- {
		props := map[string]any{}
		for j := range 10 {
			props[string(rune('a'+j))] = map[string]any{"$ref": "#/$defs/L" + string(rune('1'+i))}
		}
		defs["L"+string(rune('0'+i))] = map[string]any{"type": "object", "properties": props}
	}
	root := map[string]any{"$ref": "#/$defs/L0", "$defs": defs}
	res, err := Resolve(root, nil, Options{MaxNodes: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(encode(t, res.Schema), `"type"`); n > 5000+10 {
		t.Errorf("output has %d schemas, want at most about 5000", n)
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "node limit 5000") {
		t.Errorf("warnings = %q, want a node limit warning", res.Warnings)
	}
	if !res.Truncated {
		t.Error("Truncated = false after the node limit")
	}
	if small, _ := Resolve(map[string]any{"type": "object"}, nil, Options{}); small.Truncated {
		t.Error("Truncated = true for a one-node schema")
	}
}

func TestResolveDoesNotModifyInput(t *testing.T) {
	in := `{"type":"object","properties":{"a":{"allOf":[{"$ref":"#/$defs/X"}],"nullable":true},"b":{"$ref":"#/$defs/X","description":"b"}},"$defs":{"X":{"type":"object","properties":{"p":{"type":"string","readOnly":true}},"required":["p"]}}}`
	schema := decode(t, in)
	for _, opts := range []Options{{Strict: true, Direction: Request}, {Raw: true, KeepRefs: true}} {
		if _, err := Resolve(schema, nil, opts); err != nil {
			t.Fatal(err)
		}
		if got, want := encode(t, schema), encode(t, decode(t, in)); got != want {
			t.Fatalf("input modified:\n got %s\nwant %s", got, want)
		}
	}
}

func TestStripOmitted(t *testing.T) {
	original := decode(t, `{"type":"object","required":["id","nested"],"properties":{
		"id":{"type":["string","null"]},
		"note":{"type":"string"},
		"nested":{"type":"object","required":["x"],"properties":{"x":{"type":"string"},"y":{"type":"string"}}},
		"list":{"type":"array","items":{"anyOf":[{"type":"object","properties":{"z":{"type":"string"}}},{"type":"string"}]}}
	}}`)
	args := decode(t, `{"id":null,"note":null,"unknown":null,"nested":{"x":null,"y":null},"list":[{"z":null},"s",null]}`)
	want := `{"id":null,"list":[{},"s",null],"nested":{"x":null},"unknown":null}`
	if got := encode(t, StripOmitted(args, original)); got != want {
		t.Errorf("StripOmitted = %s, want %s", got, want)
	}
	if args["note"] != nil || len(args) != 5 {
		t.Errorf("args modified: %v", args)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ForLLM shows oneOf as anyOf everywhere, leaves the input alone and
// shares what it does not change.
func TestForLLM(t *testing.T) {
	in := decode(t, `{"type":"object","properties":{
		"pet":{"oneOf":[{"type":"string"},{"type":"object","properties":{"x":{"oneOf":[{"type":"integer"}]}}}]},
		"both":{"anyOf":[{"type":"string"}],"oneOf":[{"type":"integer"}]},
		"plain":{"type":"string"}}}`)
	before := encode(t, in)
	got := ForLLM(in).(map[string]any)
	want := `{"type":"object","properties":{
		"pet":{"anyOf":[{"type":"string"},{"type":"object","properties":{"x":{"anyOf":[{"type":"integer"}]}}}]},
		"both":{"anyOf":[{"type":"string"}]},
		"plain":{"type":"string"}}}`
	if g, w := encode(t, got), encode(t, decode(t, want)); g != w {
		t.Errorf("ForLLM\n got %s\nwant %s", g, w)
	}
	if encode(t, in) != before {
		t.Error("ForLLM modified its input")
	}
	plain := in["properties"].(map[string]any)["plain"].(map[string]any)
	plain["marker"] = true
	if got["properties"].(map[string]any)["plain"].(map[string]any)["marker"] != true {
		t.Error("an unchanged part was copied, not shared")
	}
}
