package schema

import (
	"fmt"
	"reflect"
	"testing"
)

// TestMemoSameResults: resolving the request bodies and responses of
// OpenAI's operations (Stripe's bodies: its responses take a minute
// alone) with one Memo gives each the schema and the warnings that
// resolving it alone gives, in each direction and mode.
func TestMemoSameResults(t *testing.T) {
	for name, modes := range map[string][]Options{
		stripeSpec: {{Direction: Request}, {Direction: Request, Strict: true}},
		openaiSpec: {{Direction: Request}, {Direction: Response}, {Direction: Request, Strict: true}, {Raw: true}},
	} {
		doc := loadCorpus(t, name)
		lookup := OpenAPILookup(doc)
		ops := operations(t, doc)
		for _, opts := range modes {
			memo := NewMemo()
			shared := opts
			shared.Memo = memo
			n := 0
			for _, op := range ops {
				for i, s := range []any{op.body, op.response} {
					if s == nil || name == stripeSpec && i == 1 {
						continue
					}
					alone, err1 := Resolve(s, lookup, opts)
					with, err2 := Resolve(s, lookup, shared)
					if fmt.Sprint(err1) != fmt.Sprint(err2) || !reflect.DeepEqual(alone, with) {
						t.Fatalf("%s %s %+v: with a memo\n%v %v\nalone\n%v %v", name, op.id, opts, with, err2, alone, err1)
					}
					n++
				}
			}
			if n < 200 || name == openaiSpec && len(memo.m) == 0 { // Stripe's bodies hold no reference
				t.Fatalf("%s: %d schemas resolved, %d expansions kept", name, n, len(memo.m))
			}
		}
	}
}

// TestMemoOtherOptions: a Memo serves the options of its first call; a
// call with others expands afresh (a request's expansion leaves out
// readOnly fields, a response's keeps them).
func TestMemoOtherOptions(t *testing.T) {
	doc := map[string]any{"components": map[string]any{"schemas": map[string]any{"A": map[string]any{"type": "object", "properties": map[string]any{
		"id": map[string]any{"type": "string", "readOnly": true}, "name": map[string]any{"type": "string"}}}}}}
	lookup := OpenAPILookup(doc)
	ref := map[string]any{"$ref": "#/components/schemas/A"}
	memo := NewMemo()
	req, _ := Resolve(ref, lookup, Options{Direction: Request, Memo: memo})
	resp, _ := Resolve(ref, lookup, Options{Direction: Response, Memo: memo})
	if _, ok := req.Schema["properties"].(map[string]any)["id"]; ok {
		t.Errorf("request: %v", req.Schema)
	}
	if _, ok := resp.Schema["properties"].(map[string]any)["id"]; !ok {
		t.Errorf("response with the request's memo: %v", resp.Schema)
	}
}

// TestAllOfMergeLinear: an allOf of n members of a property each costs
// allocations in proportion to n (merging copied the properties united
// so far at every member: 5,000 members took 1.2 s).
func TestAllOfMergeLinear(t *testing.T) {
	allOf := func(n int) map[string]any {
		members := make([]any, n)
		for i := range members {
			name := fmt.Sprintf("f%d", i)
			members[i] = map[string]any{"type": "object", "required": []any{name}, "properties": map[string]any{name: map[string]any{"type": "string"}}}
		}
		return map[string]any{"allOf": members}
	}
	per := func(n int) float64 {
		s := allOf(n)
		allocs := testing.AllocsPerRun(2, func() {
			res, err := Resolve(s, nil, Options{})
			if err != nil || len(res.Schema["properties"].(map[string]any)) != n || len(res.Schema["required"].([]any)) != n {
				t.Fatalf("%v: %d properties", err, len(res.Schema["properties"].(map[string]any)))
			}
		})
		return allocs / float64(n)
	}
	small, large := per(500), per(4000)
	t.Logf("allocations per member: %.1f at 500, %.1f at 4,000", small, large)
	if large > 1.2*small {
		t.Errorf("allocations per member grew %.2f× from 500 to 4,000 members", large/small)
	}
}
