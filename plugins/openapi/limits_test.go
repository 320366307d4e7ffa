package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/corpus"
	"github.com/blindexec/blindexec/plugins"
)

// limitDoc is a document of ops POST operations: each sends the body
// component B (absent when body is nil) and takes the query parameters
// params. Its body and parameters are shared: what each operation makes
// is the amplification the limits bound.
func limitDoc(t testing.TB, ops int, body map[string]any, params int) []byte {
	t.Helper()
	var list []any
	for i := range params {
		list = append(list, map[string]any{"name": fmt.Sprintf("q%d", i), "in": "query", "schema": map[string]any{"type": "string"}})
	}
	paths := map[string]any{}
	for i := range ops {
		op := map[string]any{"operationId": fmt.Sprintf("op%d", i), "responses": map[string]any{"204": map[string]any{"description": "done"}}}
		if body != nil {
			op["requestBody"] = map[string]any{"content": map[string]any{"application/json": map[string]any{
				"schema": map[string]any{"$ref": "#/components/schemas/B"}}}}
		}
		if len(list) > 0 {
			op["parameters"] = list
		}
		paths[fmt.Sprintf("/p%05d", i)] = map[string]any{"post": op}
	}
	b, err := json.Marshal(map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "Limits", "version": "1"},
		"servers": []any{map[string]any{"url": "https://api.example.com"}}, "paths": paths,
		"components": map[string]any{"schemas": map[string]any{"B": body}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// props is an object schema of n string properties.
func props(n int) map[string]any {
	p := map[string]any{}
	for i := range n {
		p[fmt.Sprintf("f%d", i)] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": p}
}

func convertDoc(t testing.TB, data []byte, opts Options) ([]Operation, []Failure, error) {
	t.Helper()
	doc, err := Load(data, "limits")
	if err != nil {
		t.Fatal(err)
	}
	return Convert(doc, opts)
}

// paddedBody is a body of one property whose description makes the
// plugin's parameter schema exactly size bytes.
func paddedBody(t *testing.T, size int) map[string]any {
	body := func(n int) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{
			"f": map[string]any{"type": "string", "description": strings.Repeat("x", n)}}}
	}
	ops, _, err := convertDoc(t, limitDoc(t, 1, body(1), 0), Options{})
	if err != nil || len(ops) != 1 {
		t.Fatalf("%v, %d operations", err, len(ops))
	}
	return body(size - len(ops[0].Plugin.Parameters) + 1)
}

// nested is an array schema n levels deep.
func nested(n int) map[string]any {
	s := map[string]any{"type": "string"}
	for range n {
		s = map[string]any{"type": "array", "items": s}
	}
	return s
}

// TestPluginLimits: an operation whose plugin would be just within an
// inline plugin's limits imports as it is; one just over imports
// reduced, within the limits, with a warning naming what was reduced
// and the limit; parameters too many to reduce fail the operation, by
// its key, with the part and the limit named.
func TestPluginLimits(t *testing.T) {
	l := plugins.DefaultSchemaLimits
	for _, tc := range []struct {
		name        string
		under, over func(t *testing.T) []byte
		limit       string
		warning     string // of the operation just over; "" when it fails
		args        int    // the arguments of the reduced plugin
	}{
		{"body properties",
			func(t *testing.T) []byte { return limitDoc(t, 1, props(l.Properties), 0) },
			func(t *testing.T) []byte { return limitDoc(t, 1, props(l.Properties+1), 0) },
			plugins.LimitProperties, "request body of 2001 fields made one free-form object argument (", 1},
		{"parameters",
			func(t *testing.T) []byte { return limitDoc(t, 1, nil, l.Properties) },
			func(t *testing.T) []byte { return limitDoc(t, 1, nil, l.Properties+1) },
			plugins.LimitProperties, "", 0},
		{"parameters and body together",
			func(t *testing.T) []byte { return limitDoc(t, 1, props(l.Properties-10), 10) },
			func(t *testing.T) []byte { return limitDoc(t, 1, props(l.Properties-10), 11) },
			plugins.LimitProperties, "request body of 1990 fields made one free-form object argument (", 12},
		{"bytes",
			func(t *testing.T) []byte { return limitDoc(t, 1, paddedBody(t, l.Bytes), 0) },
			func(t *testing.T) []byte { return limitDoc(t, 1, paddedBody(t, l.Bytes+1), 0) },
			plugins.LimitBytes, "parameters reduced: ", 1},
		// the root, its properties and the body's field: three levels
		{"depth",
			func(t *testing.T) []byte {
				return limitDoc(t, 1, map[string]any{"type": "object", "properties": map[string]any{"a": nested(l.Depth - 3)}}, 0)
			},
			func(t *testing.T) []byte {
				return limitDoc(t, 1, map[string]any{"type": "object", "properties": map[string]any{"a": nested(l.Depth - 2)}}, 0)
			},
			plugins.LimitDepth, "parameters reduced: ", 1},
		// an enum's values are not subschemas: the resolver keeps them
		// whole, so they are what can make a plugin of many nodes
		{"nodes",
			func(t *testing.T) []byte { return limitDoc(t, 1, enumOfLists(l.Nodes-3), 0) },
			func(t *testing.T) []byte { return limitDoc(t, 1, enumOfLists(l.Nodes-2), 0) },
			plugins.LimitNodes, "parameters reduced: ", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, failures, err := convertDoc(t, tc.under(t), Options{})
			if err != nil || len(ops) != 1 || len(failures) != 0 || len(ops[0].Warnings) != 0 {
				t.Fatalf("just under: %v, %d operations, failures %v", err, len(ops), failures)
			}
			if err := plugins.CheckSchemaCost(ops[0].Plugin.Parameters); err != nil {
				t.Errorf("just under: an inline plugin would be refused: %v", err)
			}
			ops, failures, err = convertDoc(t, tc.over(t), Options{})
			cost := (&plugins.CostError{Limit: tc.limit, Max: limitOf(l, tc.limit)}).Error()
			if tc.warning == "" {
				if err != nil || len(ops) != 0 || len(failures) != 1 {
					t.Fatalf("just over: %v, %d operations, failures %v", err, len(ops), failures)
				}
				want := fmt.Sprintf("parameters (%d): %s", l.Properties+1, cost)
				if f := failures[0]; f.Key != "POST /p00000" || !strings.HasPrefix(f.Reason, want) {
					t.Errorf("just over: %s: %s, want %q", f.Key, f.Reason, want)
				}
				return
			}
			if err != nil || len(ops) != 1 || len(failures) != 0 {
				t.Fatalf("just over: %v, %d operations, failures %v", err, len(ops), failures)
			}
			p := ops[0].Plugin
			if err := plugins.CheckSchemaCost(p.Parameters); err != nil {
				t.Errorf("just over: reduced, an inline plugin would still be refused: %v", err)
			}
			if w := strings.Join(ops[0].Warnings, "\n"); !strings.HasPrefix(w, tc.warning) || !strings.Contains(w, cost) {
				t.Errorf("just over: warnings %q, want %q and %q", w, tc.warning, cost)
			}
			if !strings.Contains(string(p.Parameters), omittedNote) {
				t.Errorf("just over: no free-form part in %.300s", p.Parameters)
			}
			if n := len(p.Execution.ParamPlacement.Args); n != tc.args {
				t.Errorf("just over: %d arguments, want %d", n, tc.args)
			}
		})
	}
}

// longNames is an object schema of n string properties with names of
// 2,000 characters, which arguments' names cut to 64.
func longNames(n int) map[string]any {
	p := map[string]any{}
	for i := range n {
		p[fmt.Sprintf("f%d_%s", i, strings.Repeat("x", 2000))] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": p}
}

// TestLimitsCountThePlugin: what is held to the limits is the plugin as
// written, not the document's body: 600 properties of 2,000-character
// names are 1.2 MB of body, and a plugin of 81 kB under arguments' names
// of 64 characters at most.
func TestLimitsCountThePlugin(t *testing.T) {
	ops, failures, err := convertDoc(t, limitDoc(t, 2, longNames(600), 0), Options{})
	if err != nil || len(ops) != 2 || len(failures) != 0 {
		t.Fatalf("%v, %d operations, failures %v", err, len(ops), failures)
	}
	if n := len(ops[0].Plugin.Parameters); n > 100_000 {
		t.Errorf("%d bytes of parameters", n)
	}
}

// enumOfLists is an object whose one property allows n-1 empty lists:
// n+3 nodes with the object, its properties, the property and its enum,
// as many as the plugin's parameters.
func enumOfLists(n int) map[string]any {
	enum := make([]any, n-1)
	for i := range enum {
		enum[i] = []any{}
	}
	return map[string]any{"type": "object", "properties": map[string]any{"e": map[string]any{"enum": enum}}}
}

func limitOf(l plugins.SchemaLimits, name string) int {
	return map[string]int{plugins.LimitBytes: l.Bytes, plugins.LimitDepth: l.Depth, plugins.LimitProperties: l.Properties, plugins.LimitNodes: l.Nodes}[name]
}

// TestImportLimit: a conversion whose plugins count exactly
// Options.MaxBytes converts; one byte less refuses it whole, naming the
// operation at which it passed the limit, and makes no plugin.
func TestImportLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  []byte
	}{
		{"a shared body", limitDoc(t, 50, props(300), 0)},
		{"shared parameters", limitDoc(t, 50, nil, 300)},
		{"operations that fail count", limitDoc(t, 50, nil, plugins.DefaultSchemaLimits.Properties+1)},
		{"reduced operations", limitDoc(t, 50, props(plugins.DefaultSchemaLimits.Properties+1), 0)},
		{"a body and parameters", limitDoc(t, 50, props(100), 100)},
		{"names cut to 64 characters", limitDoc(t, 50, longNames(30), 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := Load(tc.doc, "limits")
			if err != nil {
				t.Fatal(err)
			}
			c, err := newConverter(doc, Options{MaxBytes: 1 << 40})
			if err != nil {
				t.Fatal(err)
			}
			ops, failures, err := c.run()
			if err != nil || len(ops)+len(failures) != 50 {
				t.Fatalf("%v, %d operations, %d failures", err, len(ops), len(failures))
			}
			held := 0
			for _, op := range ops {
				held += len(op.Plugin.Parameters) + len(op.Plugin.Title) + len(op.Plugin.Description)
			}
			if c.total < held {
				t.Errorf("counted %d bytes, the plugins hold %d", c.total, held)
			}
			if ops2, _, err := Convert(doc, Options{MaxBytes: c.total}); err != nil || len(ops2) != len(ops) {
				t.Fatalf("at the limit: %v, %d operations", err, len(ops2))
			}
			ops2, failures2, err := Convert(doc, Options{MaxBytes: c.total - 1})
			var tl *TooLargeError
			if !errors.As(err, &tl) || ops2 != nil || failures2 != nil {
				t.Fatalf("a byte under: %v, %d operations", err, len(ops2))
			}
			if tl.Key != "POST /p00049" || tl.Operations != 50 || tl.Max != c.total-1 || !strings.Contains(err.Error(), EnvMaxMB) {
				t.Errorf("a byte under: %+v: %v", tl, err)
			}
		})
	}
}

// TestHostileShapes: what a document of a few hundred kB makes through
// each amplification the importer met, bounded by the limits. Each
// shape is the attack's (issue: 2,000 operations of one 3,000-property
// body took 33 s), counted by its outcome, not its time: a body over
// the limits imports as one free-form argument, a plugin of a few
// hundred bytes.
func TestHostileShapes(t *testing.T) {
	allOf := func(n int) map[string]any {
		var members []any
		for i := range n {
			name := fmt.Sprintf("f%d", i)
			members = append(members, map[string]any{"type": "object", "required": []any{name},
				"properties": map[string]any{name: map[string]any{"type": "string"}}})
		}
		return map[string]any{"allOf": members}
	}
	long := props(1900)
	for name, s := range long["properties"].(map[string]any) {
		delete(long["properties"].(map[string]any), name)
		long["properties"].(map[string]any)[name+strings.Repeat("_long", 40)] = s
	}
	for _, tc := range []struct {
		name             string
		doc              []byte
		imported, failed int
		tooLarge         bool
	}{
		{"2,000 operations of one body of 3,000 properties", limitDoc(t, 2000, props(3000), 0), 2000, 0, false},
		{"an allOf of 5,000 members", limitDoc(t, 1, allOf(5000), 0), 1, 0, false},
		{"2,000 operations of one body of 1,900 long names", limitDoc(t, 2000, long, 0), 0, 0, true},
		{"3,000 parameters", limitDoc(t, 10, nil, 3000), 0, 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, failures, err := convertDoc(t, tc.doc, Options{})
			var tl *TooLargeError
			if tc.tooLarge != errors.As(err, &tl) || len(ops) != tc.imported || len(failures) != tc.failed {
				t.Fatalf("%d bytes of document: %v, %d operations, %d failed", len(tc.doc), err, len(ops), len(failures))
			}
			for _, op := range ops {
				if n := len(op.Plugin.Parameters); n > 500 {
					t.Fatalf("%s: %d bytes of parameters", op.Key, n)
				}
			}
		})
	}
}

// TestMeterAsCheckSchemaCost: the meter counts every plugin of the test
// documents and Stripe as CheckSchemaCost does: its bytes are the
// parameters' (no invisible character removed), and each plugin is
// within limits set to its counts and over them by one less.
func TestMeterAsCheckSchemaCost(t *testing.T) {
	n := 0
	for name, data := range testDocuments(t) {
		ops, _, err := convertDoc(t, data, Options{BaseURL: "https://api.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			checkMeter(t, name+" "+op.Key, op.Plugin.Parameters)
			n++
		}
	}
	if n < 400 {
		t.Fatalf("%d plugins measured", n)
	}
}

// checkMeter measures the schema raw (JSON without $refs) and holds the
// meter to CheckSchemaCost with limits at and just under each count.
func checkMeter(t *testing.T, what string, raw []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return
	}
	enc, err := encodeTree(v)
	if err != nil {
		return
	}
	s := newMeter().measure(v, false, 0)
	if s.bytes != len(enc) {
		t.Fatalf("%s: measured %d bytes, encoded %d", what, s.bytes, len(enc))
	}
	saved := plugins.DefaultSchemaLimits
	defer func() { plugins.DefaultSchemaLimits = saved }()
	exact := plugins.SchemaLimits{Bytes: s.bytes, Depth: s.depth, Properties: s.props, RefExpansions: 1 << 30, Nodes: s.nodes}
	plugins.DefaultSchemaLimits = exact
	if err := plugins.CheckSchemaCost(enc); err != nil {
		t.Fatalf("%s: measured %+v, CheckSchemaCost at those limits: %v", what, s, err)
	}
	for _, under := range []struct {
		limit string
		l     plugins.SchemaLimits
	}{
		{plugins.LimitBytes, plugins.SchemaLimits{Bytes: s.bytes - 1}},
		{plugins.LimitDepth, plugins.SchemaLimits{Depth: s.depth - 1}},
		{plugins.LimitProperties, plugins.SchemaLimits{Properties: s.props - 1}},
		{plugins.LimitNodes, plugins.SchemaLimits{Nodes: s.nodes - 1}},
	} {
		l := exact
		switch under.limit {
		case plugins.LimitBytes:
			l.Bytes = under.l.Bytes
		case plugins.LimitDepth:
			l.Depth = under.l.Depth
		case plugins.LimitProperties:
			l.Properties = under.l.Properties
		case plugins.LimitNodes:
			l.Nodes = under.l.Nodes
		}
		if limitOf(l, under.limit) < 0 || under.limit == plugins.LimitProperties && s.props == 0 || under.limit == plugins.LimitDepth && s.depth == 0 {
			continue
		}
		plugins.DefaultSchemaLimits = l
		var ce *plugins.CostError
		if err := plugins.CheckSchemaCost(enc); !errors.As(err, &ce) || ce.Limit != under.limit {
			t.Fatalf("%s: measured %+v; CheckSchemaCost with %s one less: %v", what, s, under.limit, err)
		}
		if got := s.over(l); got == nil || got.Limit != under.limit {
			t.Fatalf("%s: measured %+v; over %s one less: %v", what, s, under.limit, got)
		}
	}
}

// FuzzMeter: any JSON without $ref is measured as encodeTree writes it
// and as CheckSchemaCost counts it.
func FuzzMeter(f *testing.F) {
	for _, s := range []string{`{"type":"object","properties":{"a":{"type":"array","items":{}},"properties":{}}}`,
		`{"properties":{"properties":{"properties":{"x":1}}}}`, `[[[]],{"a":"\u2028<"}]`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if strings.Contains(string(data), "$ref") || strings.Contains(string(data), `\u0024`) {
			return // CheckSchemaCost would expand it
		}
		checkMeter(t, string(data), data)
	})
}

// TestSharedPathItemsListed: paths that all $ref one path item of eight
// operations make operations without their bytes (20,000 paths of 35
// bytes, 160,000 operations). The import is refused once its selected
// operations are more than its limit holds at their least, before any is
// converted: every one was listed, then converted up to the limit, 428,000
// allocations; a selection lists only what it selects.
func TestSharedPathItemsListed(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"servers":[{"url":"https://x.example"}],"paths":{"/a":{`)
	for i, m := range methods {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s":{"responses":{"200":{"description":"ok"}}}`, m)
	}
	b.WriteString(`}`)
	for i := range 20_000 {
		fmt.Fprintf(&b, `,"/p%05d":{"$ref":"#/paths/~1a"}`, i)
	}
	b.WriteString(`}}`)
	doc, err := Load([]byte(b.String()), "refs")
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1 << 20
	var tl *TooLargeError
	allocs := testing.AllocsPerRun(1, func() {
		_, _, err = Convert(doc, Options{MaxBytes: limit})
	})
	if !errors.As(err, &tl) || tl.Listed != limit/pluginOverhead+1 || !strings.Contains(err.Error(), "more operations than the import's limit of 1 MiB") {
		t.Fatalf("Convert = %v; want a TooLargeError of the listing at operation %d", err, limit/pluginOverhead+1)
	}
	t.Logf("%.0f allocations", allocs)
	if allocs > 30_000 {
		t.Errorf("%.0f allocations to refuse the import, want under 30,000", allocs)
	}
	ops, failures, err := Convert(doc, Options{MaxBytes: limit, Paths: []string{"/p0000*"}})
	if err != nil || len(ops)+len(failures) != 80 {
		t.Errorf("a selection of 10 paths: %d operations, %d failed, %v; want 80", len(ops), len(failures), err)
	}
}

// TestHasOperation: a sync's question of each plugin it holds answers as
// the listing of the document's operations would, path items that $ref
// another included.
func TestHasOperation(t *testing.T) {
	doc, err := Load([]byte(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
		"/a":{"get":{"responses":{"200":{"description":"ok"}}},"parameters":[]},
		"/b":{"$ref":"#/paths/~1a"},
		"/c":{"$ref":"#/paths/~1missing"},
		"x-ext":{"get":{"responses":{"200":{"description":"ok"}}}}}}`), "has")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{
		"GET /a": true, "GET /b": true, "POST /a": false, "get /a": false, "PARAMETERS /a": false,
		"GET /c": false, "GET x-ext": false, "GET /d": false, "GET": false, "": false,
	} {
		if got := HasOperation(doc, key); got != want {
			t.Errorf("HasOperation(%q) = %v, want %v", key, got, want)
		}
	}
}

// TestMemoSharedNotWritten: operations sharing a component through the
// import's memo (schema.Memo) each get their own parameter description,
// deprecation and body description: what one operation adds to a shared
// expansion never reaches another.
func TestMemoSharedNotWritten(t *testing.T) {
	doc, err := Load([]byte(`{"openapi":"3.0.3","info":{"title":"t","version":"1"},"servers":[{"url":"https://x.example"}],
	"components":{"schemas":{"Id":{"type":"string"},"Note":{"type":"string"}}},
	"paths":{
	"/a":{"post":{"operationId":"a","parameters":[{"name":"id","in":"query","description":"A's id","deprecated":true,"example":"a1","schema":{"$ref":"#/components/schemas/Id"}}],
		"requestBody":{"description":"A's note","content":{"text/plain":{"schema":{"$ref":"#/components/schemas/Note"}}}},"responses":{"200":{"description":"ok"}}}},
	"/b":{"post":{"operationId":"b","parameters":[{"name":"id","in":"query","schema":{"$ref":"#/components/schemas/Id"}}],
		"requestBody":{"content":{"text/plain":{"schema":{"$ref":"#/components/schemas/Note"}}}},"responses":{"200":{"description":"ok"}}}}}}`), "memo")
	if err != nil {
		t.Fatal(err)
	}
	ops, failures, err := Convert(doc, Options{})
	if err != nil || len(failures) != 0 || len(ops) != 2 {
		t.Fatalf("Convert = %d operations, %v, %v", len(ops), failures, err)
	}
	for _, o := range ops {
		params := string(o.Plugin.Parameters)
		leaked := strings.Contains(params, "A's") || strings.Contains(params, "Deprecated") || strings.Contains(params, "a1")
		if (o.Key == "POST /b") == leaked {
			t.Errorf("%s: parameters %s", o.Key, params)
		}
	}
}

// TestPluginLimitsLifted: Options.PluginLimits replaces an inline
// plugin's limits (a measurement's crowd keeps its operations whole);
// zero keeps them.
func TestPluginLimitsLifted(t *testing.T) {
	l := plugins.DefaultSchemaLimits
	data := limitDoc(t, 1, props(l.Properties+1), 0)
	for _, tc := range []struct {
		limits plugins.SchemaLimits
		args   int // a body reduced to one, or its fields
	}{
		{plugins.SchemaLimits{}, 1},
		{plugins.SchemaLimits{Bytes: l.Bytes, Depth: l.Depth, Properties: l.Properties + 1, Nodes: l.Nodes}, l.Properties + 1},
	} {
		ops, failed, err := convertDoc(t, data, Options{PluginLimits: tc.limits})
		if err != nil || len(ops) != 1 || len(failed) != 0 {
			t.Fatalf("limits %+v: %v, %d operations, %d failed", tc.limits, err, len(ops), len(failed))
		}
		if n := len(ops[0].Plugin.Execution.ParamPlacement.Args); n != tc.args {
			t.Errorf("limits %+v: %d arguments, want %d", tc.limits, n, tc.args)
		}
	}
}

// TestDocuSignReduced: DocuSign's eSignature API, whose envelope
// definition expands recipients and tabs past an inline plugin's limits,
// imports whole: its 37 operations over them reduced (create-envelope
// among them), each within the limits, with a warning, and the same
// plugins from a second conversion.
func TestDocuSignReduced(t *testing.T) {
	data := corpus.File(t, "../../toolsearch/testdata/crowd-docusign.net.json.gz")
	convert := func() map[string]Operation {
		ops, failures, err := convertDoc(t, data, Options{})
		if err != nil || len(failures) != 0 {
			t.Fatalf("%v, %d operations, failures %v", err, len(ops), failures)
		}
		byKey := map[string]Operation{}
		for _, op := range ops {
			byKey[op.Key] = op
		}
		return byKey
	}
	ops, again := convert(), convert()
	reduced := 0
	for key, op := range ops {
		if !slices.ContainsFunc(op.Warnings, func(w string) bool { return strings.Contains(w, "an inline plugin's limit") }) {
			continue
		}
		reduced++
		if err := plugins.CheckSchemaCost(op.Plugin.Parameters); err != nil {
			t.Errorf("%s: reduced, still over: %v", key, err)
		}
		if !bytes.Equal(op.Plugin.Parameters, again[key].Plugin.Parameters) {
			t.Errorf("%s: two conversions, two reductions", key)
		}
	}
	if len(ops) != 402 || reduced != 37 {
		t.Errorf("%d operations, %d reduced; want 402 and 37", len(ops), reduced)
	}
	create, ok := ops["POST /v2.1/accounts/{accountId}/envelopes"]
	if !ok {
		t.Fatal("no create-envelope")
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(create.Plugin.Parameters, &s); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"accountId", "recipients", "documents", "emailSubject", "status"} {
		if _, ok := s.Properties[name]; !ok {
			t.Errorf("create-envelope: no argument %s in %d", name, len(s.Properties))
		}
	}
	t.Logf("create-envelope %s: %d bytes, %q", create.Plugin.Name, len(create.Plugin.Parameters), create.Warnings)
}

// TestReducedValidates: the executor validates arguments against the
// reduced schema: a free-form part accepts any value of its type, and
// only of its type.
func TestReducedValidates(t *testing.T) {
	l := plugins.DefaultSchemaLimits
	deep := any("x")
	for range l.Depth + 5 {
		deep = []any{deep}
	}
	for _, tc := range []struct {
		name      string
		doc       []byte
		good, bad map[string]any
	}{
		{"a body made one argument", limitDoc(t, 1, props(l.Properties+1), 0),
			map[string]any{"body": map[string]any{"f0": "x", "other": []any{1, map[string]any{}}}},
			map[string]any{"body": "x"}},
		{"a subschema cut", limitDoc(t, 1, map[string]any{"type": "object", "properties": map[string]any{"a": nested(l.Depth)}}, 0),
			map[string]any{"a": deep},
			map[string]any{"a": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, failures, err := convertDoc(t, tc.doc, Options{})
			if err != nil || len(ops) != 1 || len(failures) != 0 {
				t.Fatalf("%v, %d operations, failures %v", err, len(ops), failures)
			}
			p := ops[0].Plugin
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			if errs := p.ValidateArguments(tc.good); len(errs) != 0 {
				t.Errorf("any value of the type refused: %v", errs)
			}
			if errs := p.ValidateArguments(tc.bad); len(errs) == 0 {
				t.Errorf("a value of another type accepted: %v", tc.bad)
			}
		})
	}
}
