package plugins

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSimpleOf(t *testing.T) {
	for _, tt := range []struct {
		schema string
		simple bool
	}{
		{`{"type":"object"}`, true},
		{`{"type":"object","description":"d","properties":{"q":{"type":"string","description":"x","default":"a"},"n":{"type":"integer"},"f":{"type":"number","examples":[1]},"b":{"type":"boolean","title":"t"}},"required":["q"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"q":{"type":"string","maxLength":3}}}`, false},
		{`{"type":"object","properties":{"q":{"type":"string","enum":["a"]}}}`, false},
		{`{"type":"object","properties":{"q":{"type":"string","format":"email"}}}`, false},
		{`{"type":"object","properties":{"q":{"type":"string","nullable":true}}}`, false}, // a type with null once decoded
		{`{"type":"object","properties":{"q":{"type":["string","null"]}}}`, false},
		{`{"type":"object","properties":{"q":{"type":"array","items":{"type":"string"}}}}`, false},
		{`{"type":"object","properties":{"q":{"description":"any value"}}}`, false},
		{`{"type":"object","properties":{"q":{"$ref":"#/$defs/q"}},"$defs":{"q":{"type":"string"}}}`, false},
		{`{"type":"object","additionalProperties":{"type":"string"}}`, false},
		{`{"type":"object","minProperties":1}`, false},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, false},
	} {
		root, err := decodeParameters(json.RawMessage(tt.schema), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := simpleOf(root) != nil; got != tt.simple {
			t.Errorf("simpleOf(%s) simple = %v, want %v", tt.schema, got, tt.simple)
		}
	}
}

// simpleSchemas are the schemas FuzzSimpleSchema checks arguments against.
var simpleSchemas = []string{
	`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"},"f":{"type":"number"},"b":{"type":"boolean"}},"required":["q"]}`,
	`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q","n"],"additionalProperties":false}`,
	`{"type":"object","properties":{},"additionalProperties":false}`,
	`{"type":"object","properties":{"f":{"type":"number","default":2}},"additionalProperties":true}`,
}

// FuzzSimpleSchema holds the quick check to the validator: arguments it
// finds valid, the validator finds valid.
func FuzzSimpleSchema(f *testing.F) {
	for _, args := range []string{`{"q":"a"}`, `{"q":"a","n":1}`, `{"q":"a","n":1.0}`, `{"q":"a","n":-0}`, `{"q":"a","f":1e400}`,
		`{"q":"a","n":"1"}`, `{"q":null}`, `{"q":"a","x":[1]}`, `{"b":true,"q":"é"}`, `{}`, `{"f":-12.5E-3}`} {
		for i := range simpleSchemas {
			f.Add(uint8(i), args)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, args string) {
		schema := json.RawMessage(simpleSchemas[int(which)%len(simpleSchemas)])
		d := json.NewDecoder(strings.NewReader(args))
		d.UseNumber() // as the executor decodes arguments
		var m map[string]any
		if d.Decode(&m) != nil || m == nil {
			return
		}
		c, err := compileParameters("", schema, nil)
		if err != nil || c.simple == nil {
			t.Fatalf("%s: not compiled as simple: %v", schema, err)
		}
		if c.simple.valid(m) {
			if err := c.Validate(m); err != nil {
				t.Errorf("%s: the quick check finds %s valid, the validator does not: %v", schema, args, err)
			}
		}
	})
}

// FuzzNumberSyntax holds numberSyntax to encoding/json's reading of a
// number.
func FuzzNumberSyntax(f *testing.F) {
	for _, n := range []string{"0", "-0", "12", "012", "1.", ".5", "1.5", "1e5", "1E+5", "1e-", "-", "", "1_0", "0x1", "Inf", " 1", "1.0e2"} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n string) {
		integer, ok := numberSyntax(n)
		want := json.Valid([]byte(n)) && n != "" && (n[0] == '-' || '0' <= n[0] && n[0] <= '9') && len(bytes.TrimSpace([]byte(n))) == len(n)
		if ok != want {
			t.Fatalf("numberSyntax(%q) ok = %v, want %v", n, ok, want)
		}
		if ok && integer == strings.ContainsAny(n, ".eE") {
			t.Fatalf("numberSyntax(%q) integer = %v", n, integer)
		}
	})
}

// TestValidateArgumentsSimpleAllocs: valid arguments of a simple schema
// cost no allocation (the validator's check made seven, every call).
func TestValidateArgumentsSimpleAllocs(t *testing.T) {
	p := &Plugin{Parameters: json.RawMessage(simpleSchemas[0])}
	args := map[string]any{"q": "acme", "n": json.Number("3")}
	if errs := p.ValidateArguments(args); errs != nil {
		t.Fatal(errs)
	}
	if n := testing.AllocsPerRun(100, func() { p.ValidateArguments(args) }); n != 0 {
		t.Errorf("ValidateArguments of valid arguments: %.0f allocations, want 0", n)
	}
	// An invalid call still gets the validator's errors.
	if errs := p.ValidateArguments(map[string]any{"n": json.Number("1.5")}); len(errs) != 2 {
		t.Errorf("errors = %v, want the missing q and the non-integer n", errs)
	}
}
