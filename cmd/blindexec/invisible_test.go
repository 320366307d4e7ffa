package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/invisible/invisibletest"
)

// TestInvisibleRemovedByCLI (issue 44 point 7): plugin add and import
// openapi remove invisible characters from what a model reads and say
// so; plugin get and tools show the clean text.
func TestInvisibleRemovedByCLI(t *testing.T) {
	c := newCLI(t)
	smuggled := invisibletest.Tags(invisibletest.Instruction)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.json")
	os.WriteFile(file, []byte(`{
  "name": "get\u200buser",
  "description": "Reads a user.`+smuggled+`",
  "parameters": {"type": "object", "properties": {"id": {"type": "string", "description": "The \u202eid"}}},
  "execution": {"method": "GET", "base_url": "https://users.example/u"}
}`), 0o600)
	code, out, errs := c.run("", "plugin", "add", file)
	if code != 0 {
		t.Fatalf("plugin add: %d %q %q", code, out, errs)
	}
	for _, want := range []string{"added getuser", "warning: name: 1 invisible character removed (zero_width)",
		"warning: description: 28 invisible characters removed (tag)", "warning: parameters.properties.id.description: 1 invisible character removed (bidi)"} {
		if !strings.Contains(out, want) {
			t.Errorf("plugin add says %q, want %q in it", out, want)
		}
	}
	code, out, errs = c.run("", "tools", "getuser")
	if code != 0 || !strings.Contains(out, `"Reads a user."`) || !strings.Contains(out, `"The id"`) {
		t.Errorf("tools getuser: %d %q %q", code, out, errs)
	}
	code, out, _ = c.run("", "plugin", "get", "getuser")
	var got struct {
		InvisibleRemoved []json.RawMessage `json:"invisible_removed"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.InvisibleRemoved) != 3 {
		t.Errorf("plugin get: %d %q: want the 3 removals with the row", code, out)
	}

	spec := filepath.Join(dir, "api.yaml")
	os.WriteFile(spec, []byte("openapi: 3.0.3\ninfo: {title: T, version: '1'}\nservers: [{url: 'https://api.example'}]\npaths:\n"+
		"  /items:\n    get: {operationId: listItems, summary: \"List items"+smuggled+"\", responses: {'200': {description: ok}}}\n"), 0o600)
	code, out, errs = c.run("", "import", "openapi", spec)
	if code != 0 || !strings.Contains(out, "warning: listItems: title: 28 invisible characters removed (tag)") {
		t.Errorf("import openapi: %d %q %q", code, out, errs)
	}
}
