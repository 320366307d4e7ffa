package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The JSON Schema Test Suite (testdata/JSON-Schema-Test-Suite, pinned, its
// required tests) run against the engine's validation of arguments, and the
// same against santhosh-tekuri/jsonschema/v6 as it comes, for comparison.

// suiteDialects are the drafts run, and the $schema a schema of the draft
// declares to the engine (which reads a schema without one as 2020-12).
var suiteDialects = []struct {
	dir, schema string
	draft       *jsonschema.Draft
}{
	{"draft2020-12", "https://json-schema.org/draft/2020-12/schema", jsonschema.Draft2020},
	{"draft7", "http://json-schema.org/draft-07/schema#", jsonschema.Draft7},
	{"draft4", "http://json-schema.org/draft-04/schema#", jsonschema.Draft4},
}

// suiteSkipped are the cases run on neither, by "draft/file" (every case
// of the file) or "draft/file/group", and why; engineSkipped those the
// engine does not run.
var (
	suiteSkipped = map[string]string{
		"draft2020-12/refRemote": remoteSchema,
		"draft7/refRemote":       remoteSchema,
		"draft4/refRemote":       remoteSchema,
		"draft2020-12/dynamicRef/$ref and $dynamicAnchor are independent of order - $defs first":        remoteSchema,
		"draft2020-12/dynamicRef/$ref and $dynamicAnchor are independent of order - $ref first":         remoteSchema,
		"draft2020-12/dynamicRef/$ref to $dynamicRef finds detached $dynamicAnchor":                     remoteSchema,
		"draft2020-12/dynamicRef/strict-tree schema, guards against misspelled properties":              remoteSchema,
		"draft2020-12/dynamicRef/tests for implementation dynamic anchor and reference link":            remoteSchema,
		"draft2020-12/vocabulary/ignore unrecognized optional vocabulary":                               remoteSchema + " (a metaschema of its own)",
		"draft2020-12/vocabulary/schema that uses custom metaschema with with no validation vocabulary": remoteSchema + " (a metaschema of its own)",
	}
	engineSkipped = map[string]string{
		"draft2020-12/boolean_schema": "a parameter schema is an object (true and false are run where they are subschemas)",
		"draft7/boolean_schema":       "a parameter schema is an object (true and false are run where they are subschemas)",
	}
)

// remoteSchema: the suite's remotes are served at http://localhost:1234;
// neither the engine nor the library as it comes fetches a schema by URL.
const remoteSchema = "refers to a schema at http://localhost:1234, which the engine never fetches"

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// skip is why skipped names a case of group, or ""; used collects the
// entries that did.
func skip(skipped map[string]string, used map[string]bool, draft, file, group string) string {
	for _, k := range []string{draft + "/" + file, draft + "/" + file + "/" + group} {
		if why := skipped[k]; why != "" {
			used[k] = true
			return why
		}
	}
	return ""
}

// suiteValue decodes an instance as the engine decodes arguments (numbers
// as json.Number).
func suiteValue(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// engineSchema compiles a suite schema as the engine compiles parameter
// schemas (decoded by encoding/json, nullable made a type, repeated parts
// shared), with the draft's $schema when it declares none; a proof that
// proves it must be right.
func engineSchema(t *testing.T, raw []byte, declare string) (s *jsonschema.Schema, proven bool, err error) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, false, fmt.Errorf("a parameter schema is an object, not %s", raw)
	}
	if _, ok := root["$schema"]; !ok && !strings.Contains(declare, "2020-12") {
		root["$schema"] = declare
		if raw, _ = json.Marshal(root); raw == nil {
			t.Fatal("re-encode")
		}
	}
	// The proof knows no $schema: the suite's 2020-12 schemas are proven
	// without theirs (the engine's default).
	unmarked := raw
	if root["$schema"] == suiteDialects[0].schema {
		bare := maps.Clone(root)
		delete(bare, "$schema")
		unmarked, _ = json.Marshal(bare)
	}
	nullableToType(root)
	s, err = compileDecoded(raw, root)
	if pr := newProof(); pr.match(unmarked) {
		pr.data = unmarked
		if _, proven = pr.schema(skipSpace(unmarked, 0), 0, false); proven && err != nil {
			t.Errorf("proven, and the compiler refuses it: %v\n%s", err, raw)
		}
	}
	return s, proven, err
}

// librarySchema compiles a suite schema with the library as it comes: its
// own decoder, the draft as the default.
func librarySchema(raw []byte, draft *jsonschema.Draft) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(draft)
	if err := c.AddResource("http://suite.example/schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("http://suite.example/schema.json")
}

// TestJSONSchemaTestSuite runs every required case of the suite for drafts
// 2020-12, 7 and 4 against the engine's validation (ValidateArguments'
// compiler and decoding) and against the library alone; each case not in
// suiteSkipped must pass on both.
func TestJSONSchemaTestSuite(t *testing.T) {
	type tally struct{ cases, passed, skipped, proven int }
	used := map[string]bool{}
	for _, d := range suiteDialects {
		files, err := filepath.Glob(filepath.Join("testdata/JSON-Schema-Test-Suite/tests", d.dir, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", d.dir, err)
		}
		var engine, library tally
		t.Run(d.dir, func(t *testing.T) {
			for _, path := range files {
				file := strings.TrimSuffix(filepath.Base(path), ".json")
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var groups []suiteGroup
				if err := json.Unmarshal(data, &groups); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				for _, g := range groups {
					es, proven, eerr := engineSchema(t, g.Schema, d.schema)
					if proven {
						engine.proven++
					}
					ls, lerr := librarySchema(g.Schema, d.draft)
					for _, c := range g.Tests {
						name := file + "/" + g.Description + "/" + c.Description
						for _, r := range []struct {
							who     string
							s       *jsonschema.Schema
							err     error
							n       *tally
							skipped map[string]string
						}{{"engine", es, eerr, &engine, engineSkipped}, {"library", ls, lerr, &library, nil}} {
							r.n.cases++
							if skip(suiteSkipped, used, d.dir, file, g.Description) != "" || skip(r.skipped, used, d.dir, file, g.Description) != "" {
								r.n.skipped++
								continue
							}
							if r.err != nil {
								t.Errorf("%s, %s: schema refused: %v", r.who, name, r.err)
								continue
							}
							verr := r.s.Validate(suiteValue(t, c.Data))
							if (verr == nil) != c.Valid {
								t.Errorf("%s, %s: valid %v, the suite says %v (%v)", r.who, name, verr == nil, c.Valid, verr)
								continue
							}
							r.n.passed++
						}
					}
				}
			}
		})
		t.Logf("%s: %d cases; engine %d passed, %d skipped (%d schemas proven by an import's proof); library %d passed, %d skipped",
			d.dir, engine.cases, engine.passed, engine.skipped, engine.proven, library.passed, library.skipped)
	}
	for _, m := range []map[string]string{suiteSkipped, engineSkipped} {
		for k := range m {
			if !used[k] {
				t.Errorf("skipped %q names no case of the suite", k)
			}
		}
	}
}
