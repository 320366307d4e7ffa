package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/invisible/invisibletest"
	"github.com/blindexec/blindexec/internal/testdb"
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

// TestPluginGetSaysLeftOut: plugin get of a row written with SQL that
// the catalog leaves out printed its document as any other's; it now
// says on stderr that the row is left out and why, the field named.
func TestPluginGetSaysLeftOut(t *testing.T) {
	c := newCLI(t)
	st := testdb.At(t, c.db)
	for name, url := range map[string]string{"loose": "https://ruoyi.example/{nope}", "good": "https://ruoyi.example/t"} {
		if _, err := st.DB().ExecContext(t.Context(), "INSERT INTO sys_ai_plugin (name, description, parameter_schema, execution_config, status) VALUES (?, ?, ?, ?, '0')",
			name, "Added by SQL.", `{"type": "object"}`, `{"execution": {"method": "GET", "base_url": "`+url+`"}}`); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := c.run("", "plugin", "get", "loose")
	if code != 0 || !strings.Contains(out, `"name": "loose"`) || !strings.Contains(errs, "left out of the catalog") || !strings.Contains(errs, "execution.base_url") {
		t.Errorf("plugin get of a row left out: %d %q %q", code, out, errs)
	}
	if code, _, errs := c.run("", "plugin", "get", "good"); code != 0 || errs != "" {
		t.Errorf("plugin get of a row loaded: %d %q", code, errs)
	}
	// What the LLM sees, what search finds, what a list says of the row
	// and what a call of it answers are the catalog's: the row is no tool
	// (newcomer 76: tools printed it, list called it enabled, exec said it
	// was "disabled or was removed").
	said := func(errs string) bool {
		return strings.Contains(errs, "loose is left out of the catalog") && strings.Contains(errs, "execution.base_url")
	}
	if code, out, errs := c.run("", "tools"); code != 0 || !strings.Contains(out, `"good"`) || strings.Contains(out, "loose") || !said(errs) {
		t.Errorf("tools: %d %q %q", code, out, errs)
	}
	if code, out, errs := c.run("", "tools", "loose"); code != 0 || strings.Contains(out, "loose") || !said(errs) {
		t.Errorf("tools loose: %d %q %q", code, out, errs)
	}
	if code, out, errs := c.run("", "search", "added"); code != 0 || strings.Contains(out, "loose") || !said(errs) {
		t.Errorf("search: %d %q %q", code, out, errs)
	}
	if code, out, errs := c.run("", "plugin", "list"); code != 0 || !regexp.MustCompile(`loose\s+left out\s`).MatchString(out) || !said(errs) {
		t.Errorf("plugin list: %d %q %q", code, out, errs)
	}
	if code, out, errs := c.run("", "exec", "loose", "--args", "{}"); code != 1 || out != "" || !said(errs) || strings.Contains(errs, "disabled or was removed") {
		t.Errorf("exec of a row left out: %d %q %q", code, out, errs)
	}
}

// TestPluginListsUndecodedRow: a row whose JSON column does not decode
// (written with SQL) failed plugin list, tools and search whole.
// Now list shows the row and each says on stderr which row and column,
// the other rows answered as they are; plugin get's error names both.
func TestPluginListsUndecodedRow(t *testing.T) {
	c := newCLI(t)
	st := testdb.At(t, c.db)
	for name, cfg := range map[string]string{"garbled": `{"execution": "GET"}`, "good": `{"execution": {"method": "GET", "base_url": "https://ruoyi.example/t"}}`} {
		if _, err := st.DB().ExecContext(t.Context(), "INSERT INTO sys_ai_plugin (name, description, parameter_schema, execution_config, status) VALUES (?, ?, ?, ?, '0')",
			name, "Added by SQL.", `{"type": "object"}`, cfg); err != nil {
			t.Fatal(err)
		}
	}
	said := func(errs string) bool {
		return strings.Contains(errs, "garbled") && strings.Contains(errs, "execution_config")
	}
	if code, out, errs := c.run("", "plugin", "list"); code != 0 || !strings.Contains(out, "garbled") || !strings.Contains(out, "good") || !said(errs) {
		t.Errorf("plugin list: %d %q %q", code, out, errs)
	}
	if code, out, errs := c.run("", "tools"); code != 0 || !strings.Contains(out, `"good"`) || strings.Contains(out, "garbled") || !said(errs) {
		t.Errorf("tools: %d %q %q", code, out, errs)
	}
	if code, _, errs := c.run("", "search", "added"); code != 0 || !said(errs) {
		t.Errorf("search: %d %q", code, errs)
	}
	if code, _, errs := c.run("", "plugin", "get", "garbled"); code == 0 || !said(errs) {
		t.Errorf("plugin get: %d %q", code, errs)
	}
}
