package openapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// bodyDoc is a document of one operation, method /things, sending a
// required body of mediaType whose schema is body, and taking params
// query parameters of 1,000-character descriptions.
func bodyDoc(t testing.TB, method, mediaType string, body map[string]any, params int) []byte {
	t.Helper()
	op := map[string]any{"operationId": "op", "responses": map[string]any{"204": map[string]any{"description": "done"}},
		"requestBody": map[string]any{"required": true, "content": map[string]any{mediaType: map[string]any{"schema": body}}}}
	var list []any
	for i := range params {
		list = append(list, map[string]any{"name": fmt.Sprintf("q%04d", i), "in": "query", "description": strings.Repeat("q", 1000),
			"schema": map[string]any{"type": "string"}})
	}
	if len(list) > 0 {
		op["parameters"] = list
	}
	b, err := json.Marshal(map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "Reduced", "version": "1"},
		"servers": []any{map[string]any{"url": "https://api.example.com"}}, "paths": map[string]any{"/things": map[string]any{method: op}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// described is an object schema of n string properties of 800-character
// descriptions (over a plugin's bytes from 1,300 on: the reduction then
// makes each free-form, cutting its description), and extra.
func described(n int, extra map[string]any) map[string]any {
	p := map[string]any{}
	for i := range n {
		p[fmt.Sprintf("f%04d", i)] = map[string]any{"type": "string", "description": strings.Repeat("d", 800)}
	}
	for k, v := range extra {
		p[k] = v
	}
	return map[string]any{"type": "object", "properties": p}
}

// many is an object schema of more properties than a plugin holds (its
// body is made one argument), and extra.
func many(extra map[string]any) map[string]any {
	s := props(plugins.DefaultSchemaLimits.Properties + 1)
	for k, v := range extra {
		s["properties"].(map[string]any)[k] = v
	}
	return s
}

// longDescribed is s with a description long enough for a reduction to
// make it free-form whatever it holds.
func longDescribed(s map[string]any) map[string]any {
	s["description"] = strings.Repeat("w", 800)
	return s
}

// unlimited lifts an inline plugin's limits: the operation as it would
// import unreduced.
var unlimited = plugins.SchemaLimits{Bytes: 1 << 30, Depth: 1000, Properties: 1 << 20, Nodes: 1 << 24}

func convertOne(t *testing.T, data []byte, limits plugins.SchemaLimits) Operation {
	t.Helper()
	ops, failures, err := convertDoc(t, data, Options{PluginLimits: limits})
	if err != nil || len(ops) != 1 || len(failures) != 0 {
		t.Fatalf("%v, %d operations, failures %v", err, len(ops), failures)
	}
	return ops[0]
}

// argSchemas are a plugin's arguments' schemas.
func argSchemas(t *testing.T, p *plugins.Plugin) map[string]map[string]any {
	t.Helper()
	var root struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(p.Parameters, &root); err != nil {
		t.Fatal(err)
	}
	return root.Properties
}

// TestReducedKeepsWhatTheExecutorReads: a reduction changes what an
// argument's schema describes, never what the import and the executor
// read of it: a value the document fixes (a const or a one-value enum:
// the import makes it a fixed param, which the executor forces over the
// caller's) stays fixed, in the plugin's fixed params while its argument
// stands, else (its field gone into a body sent whole) required at that
// value, so that the caller can send no other; a file's format and
// encoding, by which a multipart field is sent as a file part (its
// items' for a list of files), stay. Each is read from the same
// operation imported unreduced.
func TestReducedKeepsWhatTheExecutorReads(t *testing.T) {
	fixed := map[string]any{
		"kind":    longDescribed(map[string]any{"type": "string", "enum": []any{"thing"}}),
		"mode":    longDescribed(map[string]any{"type": "string", "const": "fast"}),
		"_method": map[string]any{"type": "string", "enum": []any{"DELETE"}},
	}
	files := map[string]any{
		"file":  longDescribed(map[string]any{"type": "string", "format": "byte"}),
		"files": longDescribed(map[string]any{"type": "array", "items": map[string]any{"type": "string", "format": "binary"}}),
	}
	large := maps.Clone(fixed)
	for i := range 150 {
		large[fmt.Sprintf("c%03d", i)] = map[string]any{"const": strings.Repeat("v", 1000)}
	}
	for _, tc := range []struct {
		name, method, mediaType string
		body                    map[string]any
		params                  int
		warning                 string
	}{
		{"arguments made free-form", "post", "application/json", described(1500, fixed), 0, "parameters reduced: "},
		{"multipart fields made free-form", "post", "multipart/form-data", described(1500, files), 0, "parameters reduced: "},
		{"a body made one argument", "post", "application/json", many(fixed), 0, "request body of 2004 fields made one"},
		{"a GET's body made one argument", "get", "application/json", many(fixed), 0, "request body of 2004 fields made one"},
		{"a form made one argument", "post", "application/x-www-form-urlencoded", many(fixed), 0, "request body of 2004 fields made one"},
		// the body made one argument, with 150 kB of fixed values, and
		// 1 MB of parameters: each made free-form in turn
		{"a body made one argument and free-form", "post", "application/json", many(large), 1000, "request body of 2154 fields made one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bodyDoc(t, tc.method, tc.mediaType, tc.body, tc.params)
			whole, reduced := convertOne(t, data, unlimited), convertOne(t, data, plugins.SchemaLimits{})
			if w := strings.Join(reduced.Warnings, "\n"); !strings.HasPrefix(w, tc.warning) {
				t.Fatalf("warnings %q, want %q", w, tc.warning)
			}
			wp, rp := whole.Plugin, reduced.Plugin
			if err := rp.Validate(); err != nil {
				t.Fatal(err)
			}
			rargs := rp.Execution.ParamPlacement.Args
			// The body sent whole: its fields as the caller must send them.
			sent := map[string]any{}
			for name, v := range wp.FixedParams {
				if _, ok := rargs[name]; ok {
					if got, ok := rp.FixedParams[name]; !ok || !reflect.DeepEqual(got, v) {
						t.Errorf("fixed param %s: %v reduced, %v unreduced", name, got, v)
					}
					continue
				}
				sent[cmp.Or(wp.Execution.ParamPlacement.Args[name].Name, name)] = v
			}
			if len(sent) > 0 {
				body := ""
				for name, a := range rargs {
					if a.Name == "$" {
						body = name
					}
				}
				if body == "" {
					t.Fatalf("fixed params %v gone with no body sent whole: %v", sent, rargs)
				}
				if errs := rp.ValidateArguments(map[string]any{body: sent}); len(errs) != 0 {
					t.Errorf("the fixed values refused: %v", errs)
				}
				if !rp.ConsequentialWith(map[string]any{body: sent}) {
					t.Errorf("a body fixing _method DELETE is not consequential")
				}
				for name := range sent {
					for _, v := range []any{"other", nil} {
						b := map[string]any{}
						for k, x := range sent {
							b[k] = x
						}
						if b[name] = v; v == nil {
							delete(b, name)
						}
						if errs := rp.ValidateArguments(map[string]any{body: b}); len(errs) == 0 {
							t.Errorf("%s.%s %v: accepted, where the unreduced plugin forces %v", body, name, v, sent[name])
						}
					}
				}
			}
			ws, rs := argSchemas(t, wp), argSchemas(t, rp)
			for name, r := range rs {
				w, ok := ws[name]
				if !ok {
					continue
				}
				items := func(s map[string]any) map[string]any { m, _ := s["items"].(map[string]any); return m }
				for _, k := range []string{"format", "contentEncoding"} {
					if !reflect.DeepEqual(w[k], r[k]) || !reflect.DeepEqual(items(w)[k], items(r)[k]) {
						t.Errorf("%s: %s %v (items %v) reduced, %v (items %v) unreduced", name, k, r[k], items(r)[k], w[k], items(w)[k])
					}
				}
			}
		})
	}
}

// TestReducedMethodOverride: a method override sent inside a body a
// reduction made one free-form argument, or in a field it made
// free-form, makes a safe call consequential as it would unreduced: the
// body sent whole is spread into the form or JSON's own fields.
func TestReducedMethodOverride(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mediaType string
		body      map[string]any
		arg       func(method string) map[string]any
	}{
		{"JSON body sent whole", "application/json", many(nil),
			func(m string) map[string]any { return map[string]any{"body": map[string]any{"_method": m, "f0": "x"}} }},
		{"form sent whole", "application/x-www-form-urlencoded", many(nil),
			func(m string) map[string]any { return map[string]any{"body": map[string]any{"_method": m}} }},
		{"field made free-form", "application/x-www-form-urlencoded",
			described(1500, map[string]any{"_method": longDescribed(map[string]any{"type": "string", "enum": []any{"GET", "DELETE"}})}),
			func(m string) map[string]any { return map[string]any{"_method": m} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := convertOne(t, bodyDoc(t, "get", tc.mediaType, tc.body, 0), plugins.SchemaLimits{})
			p := op.Plugin
			if !strings.Contains(strings.Join(op.Warnings, "\n"), "an inline plugin's limit") {
				t.Fatalf("not reduced: %q", op.Warnings)
			}
			if p.IsConsequential() {
				t.Fatal("a GET consequential of itself")
			}
			for method, want := range map[string]bool{"DELETE": true, "GET": false} {
				args := tc.arg(method)
				if errs := p.ValidateArguments(args); len(errs) != 0 {
					t.Fatalf("%v refused: %v", args, errs)
				}
				if got := p.ConsequentialWith(args); got != want {
					t.Errorf("%v: consequential %v, want %v", args, got, want)
				}
			}
		})
	}
}

// TestReducedDeterministic: a reduction depends on the operation alone:
// the same document gives the same plugins, and an operation selected
// alone the plugin it has beside others, though its cuts and expansions
// are shared with them (here a component too deep for one operation, and
// cut at another level for the other, whose body is also over the bytes).
func TestReducedDeterministic(t *testing.T) {
	deep := map[string]any{"$ref": "#/components/schemas/Deep"}
	op := func(id string, body map[string]any) map[string]any {
		return map[string]any{"operationId": id, "responses": map[string]any{"204": map[string]any{"description": "done"}},
			"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": body}}}}
	}
	data, err := json.Marshal(map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "Reduced", "version": "1"},
		"servers": []any{map[string]any{"url": "https://api.example.com"}},
		"paths": map[string]any{
			"/deep":  map[string]any{"post": op("deep", map[string]any{"type": "object", "properties": map[string]any{"d": deep, "x": map[string]any{"type": "string"}}})},
			"/large": map[string]any{"post": op("large", described(1400, map[string]any{"d": deep}))},
			"/whole": map[string]any{"put": op("whole", many(map[string]any{"d": deep, "k": map[string]any{"const": 1}}))},
		},
		"components": map[string]any{"schemas": map[string]any{"Deep": nested(plugins.DefaultSchemaLimits.Depth + 10)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	encode := func(opts Options) map[string]string {
		ops, failures, err := convertDoc(t, data, opts)
		if err != nil || len(failures) != 0 {
			t.Fatalf("%v, failures %v", err, failures)
		}
		out := map[string]string{}
		for _, o := range ops {
			if !strings.Contains(strings.Join(o.Warnings, "\n"), "an inline plugin's limit") {
				t.Errorf("%s: not reduced: %q", o.Key, o.Warnings)
			}
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			out[o.Key] = string(b)
		}
		return out
	}
	all := encode(Options{})
	if len(all) != 3 {
		t.Fatalf("%d operations", len(all))
	}
	for key, s := range encode(Options{}) {
		if s != all[key] {
			t.Errorf("%s: two conversions, two plugins:\n%.500s\n%.500s", key, s, all[key])
		}
	}
	for _, id := range []string{"deep", "large", "whole"} {
		for key, s := range encode(Options{OperationIDs: []string{id}}) {
			if s != all[key] {
				t.Errorf("%s selected alone: another plugin:\n%.500s\n%.500s", key, s, all[key])
			}
		}
	}
}

// TestReducedKeepsSmallEnums: where a reduction cuts, a scalar's enum of
// at most 50 values and 2 KiB stays (a list's items' too): a value out
// of it is still refused, as by the operation unreduced, where before
// the API was left to refuse it. A larger enum goes with the structure.
// When the enums kept would not let the plugin meet the reduction's
// target even with every argument free-form, they are dropped as before,
// and the warning says so.
func TestReducedKeepsSmallEnums(t *testing.T) {
	var large []any
	for i := range maxKeptEnum + 1 {
		large = append(large, fmt.Sprintf("v%02d", i))
	}
	// a: 70 objects of 20 long-described fields (1.1 MB, cut one level
	// down: each made free-form) beside the scalars with enums.
	a := map[string]any{
		"status": map[string]any{"type": "string", "enum": []any{"open", "closed"}},
		"level":  map[string]any{"type": []any{"integer", "null"}, "enum": []any{1.0, 2.0, 3.0}, "allOf": []any{map[string]any{"minimum": 1}}},
		"tags":   map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"red", "blue"}}},
		"code":   map[string]any{"type": "string", "enum": large},
	}
	for i := range 70 {
		a[fmt.Sprintf("s%02d", i)] = described(20, nil)
	}
	// 1,000 arguments of 50-value enums of 2,000 bytes each: 2 MB kept.
	crowd := map[string]any{}
	for i := range 1000 {
		var e []any
		for j := range maxKeptEnum {
			e = append(e, fmt.Sprintf("%03d-%s", j, strings.Repeat("e", 33)))
		}
		crowd[fmt.Sprintf("c%04d", i)] = longDescribed(map[string]any{"type": "string", "enum": e})
	}
	for _, tc := range []struct {
		name     string
		body     map[string]any
		warning  string
		good     []map[string]any
		bad      []map[string]any
		original []map[string]any // refused unreduced, accepted reduced
	}{
		{"kept where cut", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "object", "properties": a}}},
			"parameters reduced: argument a: subschemas nested 1 levels deep made free-form (",
			[]map[string]any{{"a": map[string]any{"status": "open", "level": 2, "tags": []any{"red", "blue"}, "code": "v00"}}},
			[]map[string]any{{"a": map[string]any{"status": "bogus"}}, {"a": map[string]any{"level": 7}}, {"a": map[string]any{"tags": []any{"green"}}}},
			[]map[string]any{{"a": map[string]any{"code": "bogus"}}}},
		{"dropped when over", map[string]any{"type": "object", "properties": crowd},
			"their enums dropped too (kept, they were over the limit)",
			[]map[string]any{{"c0000": "000-" + strings.Repeat("e", 33)}},
			nil,
			[]map[string]any{{"c0000": "bogus"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bodyDoc(t, "post", "application/json", tc.body, 0)
			whole, reduced := convertOne(t, data, unlimited), convertOne(t, data, plugins.SchemaLimits{})
			if w := strings.Join(reduced.Warnings, "\n"); !strings.Contains(w, tc.warning) {
				t.Fatalf("warnings %q, want %q", w, tc.warning)
			}
			rp := reduced.Plugin
			if err := rp.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := plugins.CheckSchemaCost(rp.Parameters); err != nil {
				t.Fatalf("reduced, still over: %v", err)
			}
			for _, args := range tc.good {
				if errs := rp.ValidateArguments(args); len(errs) != 0 {
					t.Errorf("%v refused: %v", args, errs)
				}
			}
			for _, args := range tc.bad {
				if errs := whole.Plugin.ValidateArguments(args); len(errs) == 0 {
					t.Fatalf("%v accepted unreduced", args)
				}
				if errs := rp.ValidateArguments(args); len(errs) == 0 {
					t.Errorf("%v accepted reduced, refused unreduced", args)
				}
			}
			for _, args := range tc.original {
				if errs := rp.ValidateArguments(args); len(errs) != 0 {
					t.Errorf("%v refused: %v; want its enum dropped", args, errs)
				}
			}
		})
	}
}
