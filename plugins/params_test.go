package plugins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNullableKeywordOnlyInSchemas: OpenAPI 3.0's nullable admits null in
// the schema object that says it, and nowhere else; a property called
// nullable (or oneOf) is validated like any other, not dropped.
func TestNullableKeywordOnlyInSchemas(t *testing.T) {
	params, err := os.ReadFile("testdata/params/keyword_names.json")
	if err != nil {
		t.Fatal(err)
	}
	p := &Plugin{Parameters: params}
	cases := []struct {
		name, args string
		wantField  string // "": admitted
	}{
		{"the property nullable, a boolean", `{"nullable": true}`, ""},
		{"the property nullable, not a boolean", `{"nullable": "yes"}`, "nullable"},
		{"the property nullable, required", `{"oneOf": "x"}`, "nullable"},
		{"the property oneOf, nullable: null", `{"nullable": false, "oneOf": null}`, ""},
		{"the property oneOf, a string", `{"nullable": false, "oneOf": 3}`, "oneOf"},
		{"an enum made nullable: null", `{"nullable": false, "level": null}`, ""},
		{"an enum made nullable: outside it", `{"nullable": false, "level": "mid"}`, "level"},
		{"an alternative made nullable", `{"nullable": false, "either": null}`, ""},
		{"a definition called nullable, made nullable", `{"nullable": false, "ref": null}`, ""},
		{"a definition called nullable, kept", `{"nullable": false, "ref": "x"}`, "ref"},
		{"a pattern property called nullable", `{"nullable": false, "tags": {"nullable": 1}}`, "tags.nullable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var args map[string]any
			if err := json.Unmarshal([]byte(c.args), &args); err != nil {
				t.Fatal(err)
			}
			errs := p.ValidateArguments(args)
			switch {
			case c.wantField == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case c.wantField != "" && (len(errs) != 1 || errs[0].Field != c.wantField):
				t.Errorf("errors %v, want one naming %s", errs, c.wantField)
			}
		})
	}
}

// TestNoSchemaLoadedFromOutside: a parameter schema's $ref to a file or a
// URL is refused, the file not read (the library's default loader read
// file: URLs; here the file holds a schema that would compile).
func TestNoSchemaLoadedFromOutside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outside.json")
	if err := os.WriteFile(path, []byte(`{"type": "string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + path, "https://schemas.example.com/x.json"} {
		p := &Plugin{Parameters: json.RawMessage(`{"type": "object", "properties": {"e": {"$ref": "` + ref + `"}}}`)}
		errs := p.ValidateArguments(map[string]any{"e": 1})
		if len(errs) != 1 || errs[0].Field != "parameters" || !strings.Contains(errs[0].Message, "loads no schema from a file or a URL") {
			t.Errorf("%s: %v", ref, errs)
		}
		if err := NewValidator().Validate(p); err == nil || !strings.Contains(err.Error(), "loads no schema") {
			t.Errorf("%s: an import's validation says %v", ref, err)
		}
	}
}
