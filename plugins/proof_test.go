package plugins

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// proofCases: what a proof must prove (the shapes imports write: else it
// saves nothing) and what it must leave to the compiler.
var proofCases = []struct {
	name   string
	schema string
	proven bool
}{
	{"repeated parts", sharedOne, true},
	{"the least", `{"type":"object"}`, true},
	{"spaces", " {\n\t\"type\" : \"object\" , \"properties\" : { \"a\" : { } } }\n", true},
	{"boolean subschemas", `{"type":"object","properties":{"a":true,"b":false},"additionalProperties":false}`, true},
	{"nullable with enum", `{"type":"object","properties":{"a":{"type":"string","nullable":true,"enum":["x",null]}}}`, true},
	{"nullable false on null", `{"type":"object","properties":{"a":{"type":"null","nullable":false}}}`, true},
	{"annotations and extensions", `{"type":"object","description":"é \"q\" \u00e9\n","x-ms":{"a":[1,-2.5e3,true,null]},"example":{"a":1},"discriminator":{"propertyName":"k"}}`, true},
	{"escaped pattern", `{"type":"object","properties":{"v":{"type":"string","pattern":"^\\d+\\.\\d+$"}}}`, true},
	{"numbers", `{"type":"object","properties":{"n":{"type":"number","minimum":-1.5,"maximum":1e10,"multipleOf":0.01},"s":{"type":"string","minLength":0,"maxLength":64}}}`, true},
	{"type lists", `{"type":"object","properties":{"a":{"type":["string","integer"]},"b":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, true},
	{"a property called as keywords", `{"type":"object","properties":{"nullable":{"type":"boolean"},"$ref":{"type":"string"},"type":{"enum":["a"]}},"required":["nullable","type"]}`, true},

	{"a bad pattern", `{"type":"object","properties":{"v":{"type":"string","pattern":"(a"}}}`, false},
	{"a bad escaped pattern", `{"type":"object","properties":{"v":{"type":"string","pattern":"\\p{Nope}"}}}`, false},
	{"nullable on null", `{"type":"object","properties":{"a":{"type":"null","nullable":true}}}`, false},
	{"nullable on a list with null", `{"type":"object","properties":{"a":{"type":["string","null"],"nullable":true}}}`, false},
	{"the root not an object type", `{"type":"string"}`, false},
	{"the root's type a list", `{"type":["object"]}`, false},
	{"no type at the root", `{"properties":{}}`, false},
	{"the root an array", `[{"type":"object"}]`, false},
	{"the root true", `true`, false},
	{"items a list", `{"type":"object","properties":{"a":{"items":[{}]}}}`, false},
	{"a $ref", `{"type":"object","$defs":{"a":{}},"properties":{"a":{"$ref":"#/$defs/a"}}}`, false},
	{"a keyword outside the subset", `{"type":"object","propertyNames":{"pattern":"^a"}}`, false},
	{"a keyword twice", `{"type":"object","type":"object"}`, false},
	{"an escaped keyword", `{"typ\u0065":"object"}`, false},
	{"a negative count", `{"type":"object","properties":{"a":{"minLength":-1}}}`, false},
	{"a fraction as count", `{"type":"object","properties":{"a":{"maxItems":1.5}}}`, false},
	{"multipleOf 0", `{"type":"object","properties":{"a":{"multipleOf":0}}}`, false},
	{"an empty anyOf", `{"type":"object","properties":{"a":{"anyOf":[]}}}`, false},
	{"required twice", `{"type":"object","required":["a","a"]}`, false},
	{"required not strings", `{"type":"object","required":[1]}`, false},
	{"an unknown type", `{"type":"object","properties":{"a":{"type":"str"}}}`, false},
	{"a type twice", `{"type":"object","properties":{"a":{"type":["string","string"]}}}`, false},
	{"a type list with a trailing comma", `{"type":"object","properties":{"a":{"type":["string",]}}}`, false},
	{"a number out of range", `{"type":"object","default":1e400}`, false},
	{"a control character", "{\"type\":\"object\",\"description\":\"a\x01\"}", false},
	{"a bad escape", `{"type":"object","description":"\x"}`, false},
	{"a short \\u escape", `{"type":"object","description":"\u12"}`, false},
	{"trailing text", `{"type":"object"} x`, false},
	{"a trailing comma", `{"type":"object",}`, false},
	{"a missing comma", `{"type":"object" "title":"a"}`, false},
	{"a bad literal", `{"type":"object","default":nul}`, false},
	{"unclosed", `{"type":"object","properties":{"a":{}}`, false},
	{"mismatched", `{"type":"object","x-a":[}]}`, false},
	{"a description not a string", `{"type":"object","description":1}`, false},
	{"a subschema not a schema", `{"type":"object","properties":{"a":1}}`, false},
}

// Every schema a proof proves compiles; the shapes imports write are
// proven, and each part is read once.
func TestProof(t *testing.T) {
	for _, c := range proofCases {
		t.Run(c.name, func(t *testing.T) {
			got := newProof().proves([]byte(c.schema))
			if got != c.proven {
				t.Errorf("proven %v, want %v", got, c.proven)
			}
			DropCompiled()
			_, err := compileParameters("", json.RawMessage(c.schema), nil)
			if got && err != nil {
				t.Errorf("proven, but it does not compile: %v", err)
			}
		})
	}
}

// A part proven once is not read again: proving a second schema made of
// the first's parts adds only its own root.
func TestProofRemembersParts(t *testing.T) {
	pr := newProof()
	if !pr.proves([]byte(sharedOne)) {
		t.Fatal("not proven")
	}
	before := maps.Clone(pr.known)
	again := `{"type":"object","properties":{"a":` + address + `,"b":` + address + `}}`
	if !pr.proves([]byte(again)) {
		t.Fatal("not proven")
	}
	if added := len(pr.known) - len(before); added != 1 {
		t.Errorf("%d parts added, want 1 (the root)", added)
	}
	// A known part does not hide a bad one beside it.
	if pr.proves([]byte(`{"type":"object","properties":{"a":` + address + `,"b":{"pattern":"("}}}`)) {
		t.Error("a bad pattern proven beside a known part")
	}
}

// An import's Validator refuses what Validate refuses, with the same
// message.
func TestValidatorSameErrors(t *testing.T) {
	v := NewValidator()
	for _, c := range proofCases {
		p := &Plugin{Name: "t", Description: "d", Parameters: json.RawMessage(c.schema),
			Execution: Execution{Method: "GET", BaseURL: "https://api.example.com/x"}}
		DropCompiled()
		want := p.Validate()
		DropCompiled()
		got := v.Validate(p)
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Errorf("%s: Validator %v, Validate %v", c.name, got, want)
		}
	}
}

// FuzzProof: whatever a proof proves compiles, and is JSON; with parts
// already known or not.
func FuzzProof(f *testing.F) {
	for _, c := range proofCases {
		f.Add(c.schema)
	}
	f.Fuzz(func(t *testing.T, params string) {
		for _, pr := range []*proof{newProof(), proofOf(t, sharedOne, sharedTwo)} {
			if !pr.proves([]byte(params)) {
				continue
			}
			if !json.Valid([]byte(params)) {
				t.Fatalf("proven, not JSON: %q", params)
			}
			DropCompiled()
			if _, err := compileParameters("", json.RawMessage(params), nil); err != nil {
				t.Fatalf("proven, does not compile: %v", err)
			}
		}
	})
}

func proofOf(t *testing.T, schemas ...string) *proof {
	pr := newProof()
	for _, s := range schemas {
		if !pr.proves([]byte(s)) {
			t.Fatalf("not proven: %s", s)
		}
	}
	return pr
}

// propertyNames reads the names decoding into a struct reads.
func FuzzPropertyNames(f *testing.F) {
	for _, s := range []string{sharedOne, `{"properties":null}`, `{"Properties":{"a":1},"properties":{"b":2}}`,
		`{"properties":{"a\u00e9":1,"a":2}}`, `{"properties":3}`, `{"properties":{"a":1},"PROPERTIES":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		var doc map[string]any
		if json.Unmarshal([]byte(params), &doc) != nil {
			return // propertyNames is given JSON objects only
		}
		var root struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		err := json.Unmarshal([]byte(params), &root)
		names, ok := propertyNames([]byte(params))
		if ok != (err == nil) {
			t.Fatalf("ok %v, encoding/json: %v", ok, err)
		}
		if !ok {
			return
		}
		slices.Sort(names)
		names = slices.Compact(names)
		if want := slices.Sorted(maps.Keys(root.Properties)); strings.Join(names, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("names %q, encoding/json %q", names, want)
		}
	})
}
