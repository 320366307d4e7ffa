package plugins

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// address is repeated: in each schema, and across the two.
const (
	address   = `{"type":"object","required":["city"],"properties":{"city":{"type":"string","minLength":1},"zip":{"type":"string","pattern":"^[0-9]{5}$"},"geo":{"type":"object","properties":{"lat":{"type":"number","maximum":90},"lon":{"type":"number"}}}}}`
	sharedOne = `{"type":"object","required":["home"],"properties":{"home":` + address + `,"work":{"anyOf":[` + address + `,{"type":"null"}]},"past":{"type":"array","items":` + address + `},"tag":{"type":"string","nullable":true}}}`
	sharedTwo = `{"type":"object","properties":{"ship_to":` + address + `,"count":{"type":"integer","minimum":1}}}`
)

// The shared compilation accepts and refuses what the schema as written
// does, with the same messages.
func TestSharedCompilationSameErrors(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal([]byte(sharedOne), &root); err != nil {
		t.Fatal(err)
	}
	b := newSharedBatch()
	b.addRoot([]byte(sharedOne), root)
	shared, err := b.compile(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(slices.Collect(maps.Keys(b.defs)), func(name string) bool { return strings.HasPrefix(name, "s") }) {
		t.Fatal("no subschema was shared")
	}
	plain, err := compilePlain(root)
	if err != nil {
		t.Fatal(err)
	}
	cases := []string{
		`{"home":{"city":"Oslo"}}`,
		`{}`,
		`{"home":{"city":""}}`,
		`{"home":{"city":"Oslo","zip":"x1"},"work":{"geo":{"lat":91}}}`,
		`{"home":{"city":"Oslo"},"past":[{"city":"A"},{"zip":"1"},{"city":3}]}`,
		`{"home":{"city":"Oslo"},"work":null,"tag":null}`,
		`{"home":{"city":"Oslo"},"work":7}`,
	}
	for _, c := range cases {
		var v any
		if err := json.Unmarshal([]byte(c), &v); err != nil {
			t.Fatal(err)
		}
		if got, want := messages(shared.Validate(v)), messages(plain.Validate(v)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: shared %q, as written %q", c, got, want)
		}
	}
}

func messages(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	for _, fe := range argumentErrorsOf(err) {
		out = append(out, fe.Sentence())
	}
	slices.Sort(out) // ValidateArguments sorts them too
	return out
}

// A schema that refers to its own parts is compiled as it is.
func TestSharedCompilationKeepsReferences(t *testing.T) {
	params := `{"type":"object","$defs":{"a":` + address + `},"properties":{"x":{"$ref":"#/$defs/a"},"y":` + address + `,"z":` + address + `}}`
	var root map[string]any
	if err := json.Unmarshal([]byte(params), &root); err != nil {
		t.Fatal(err)
	}
	b := newSharedBatch()
	b.addRoot([]byte(params), root)
	if _, err := b.compile(root); err != nil {
		t.Fatal(err)
	}
	if len(b.count) != 0 {
		t.Errorf("numbered %d subschemas of a schema with references", len(b.count))
	}
}

// A schema whose one part is repeated k times compiles shared for a
// fraction of the allocations it takes as written, growing with k alone.
func TestSharedCompilationCost(t *testing.T) {
	repeated := func(k int) json.RawMessage {
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		for i := range k {
			if i > 0 {
				b.WriteByte(',')
			}
			// Each property holds the address up to 7 levels deep.
			fmt.Fprintf(&b, `"p%d":`, i)
			b.WriteString(strings.Repeat(`{"type":"object","properties":{"next":`, i%8))
			b.WriteString(address)
			b.WriteString(strings.Repeat("}}", i%8))
		}
		b.WriteString(`}}`)
		return json.RawMessage(b.String())
	}
	allocs := func(f func()) float64 { return testing.AllocsPerRun(1, f) }
	shared := func(params json.RawMessage) float64 {
		return allocs(func() {
			DropCompiled()
			if _, err := compileParameters("", params, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	large := repeated(320)
	var root map[string]any
	if err := json.Unmarshal(large, &root); err != nil {
		t.Fatal(err)
	}
	plain := allocs(func() {
		if _, err := compilePlain(root); err != nil {
			t.Fatal(err)
		}
	})
	small, big := shared(repeated(40)), shared(large)
	t.Logf("allocations: 40 repeats %.0f, 320 repeats %.0f (%.2f×); 320 as written %.0f", small, big, big/small, plain)
	if big > 8*1.3*small {
		t.Errorf("allocations grew %.1f× for a schema 8× as large", big/small)
	}
	if big > plain/2 {
		t.Errorf("shared: %.0f allocations, as written %.0f: want less than half", big, plain)
	}
}

func argumentErrorsOf(err error) []FieldError {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []FieldError{{Message: err.Error()}}
	}
	return argumentErrors(ve)
}

// FuzzSharedCompilation: a parameter schema compiles shared exactly when
// it compiles as written, and both say the same of a value.
func FuzzSharedCompilation(f *testing.F) {
	f.Add(sharedOne, `{"home":{"city":"Oslo","zip":"x"},"past":[{"city":1}]}`)
	f.Add(sharedTwo, `{"ship_to":{},"count":0}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"enum":[1,"1",null]}}},"c":{"type":"object","properties":{"b":{"enum":[1,"1",null]}}}}}`, `{"a":{"b":2},"c":{"b":"1"}}`)
	f.Add(`{"type":"object","properties":{"x":{"type":"array","items":{"type":"object","properties":{"y":{"type":"string","nullable":true}}}},"z":{"type":"array","items":{"type":"object","properties":{"y":{"type":"string","nullable":true}}}}}}`, `{"x":[{"y":null}],"z":[{"y":3}]}`)
	// Properties called as keywords are (nullable, oneOf), with nullable in a value.
	f.Add(`{"type":"object","properties":{"nullable":{"type":"boolean"},"oneOf":{"type":"string","nullable":true},"d":{"default":{"nullable":true}}}}`, `{"nullable":"x","oneOf":null}`)
	f.Fuzz(func(t *testing.T, params, value string) {
		root, err := decodeParameters(json.RawMessage(params), nil)
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		plain, perr := compilePlain(root)
		DropCompiled()
		shared, serr := compileParameters("", json.RawMessage(params), nil)
		if (perr == nil) != (serr == nil) {
			t.Fatalf("as written: %v; shared: %v", perr, serr)
		}
		if perr != nil {
			return
		}
		if got, want := messages(shared.Validate(v)), messages(plain.Validate(v)); !reflect.DeepEqual(got, want) {
			t.Fatalf("shared %q, as written %q", got, want)
		}
	})
}
