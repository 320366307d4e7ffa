package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/hostiledoc"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// TestImportInlineSources (issue 17, point 8): two inline documents are two
// sources, the same bytes with other options are re-imported, and an
// explicit source name is the identity.
func TestImportInlineSources(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	inline := func(title string) string {
		return "openapi: 3.0.3\ninfo: {title: " + title + ", version: '1'}\nservers: [{url: 'https://inline.example'}]\n" +
			"paths:\n  /" + title + ":\n    get: {operationId: get" + title + ", responses: {'200': {description: ok}}}\n"
	}
	imp := func(body map[string]any) map[string]any {
		t.Helper()
		code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, body)
		if code != http.StatusOK {
			t.Fatalf("import %v: %d %v", body, code, res)
		}
		return res
	}
	a := imp(map[string]any{"document": inline("A")})
	b := imp(map[string]any{"document": inline("B")})
	if a["source_id"] == b["source_id"] || count(b["removed"]) != 0 {
		t.Fatalf("the second inline document took the first's source: %v then %v", a, b)
	}
	if res := imp(map[string]any{"document": inline("A")}); res["up_to_date"] != true {
		t.Errorf("the same bytes and options: %v", res)
	}
	if res := imp(map[string]any{"document": inline("A"), "base_url": "https://other.example"}); res["up_to_date"] == true || count(res["changed"]) != 1 {
		t.Errorf("a new base_url was a no-op: %v", res)
	}
	if res := imp(map[string]any{"document": inline("A"), "base_url": "https://other.example", "force": true}); res["up_to_date"] == true {
		t.Errorf("force was a no-op: %v", res)
	}
	c := imp(map[string]any{"document": inline("A"), "source": "named", "prefix": "n"})
	if c["source_id"] == a["source_id"] {
		t.Errorf("an explicit source shared the inline one: %v", c)
	}
}

// count is the length of a JSON list (0 for null).
func count(v any) int {
	l, _ := v.([]any)
	return len(l)
}

// TestImportTooLarge: a document whose plugins would be over the import's
// limit is refused whole, 400 import_too_large naming the limit and the
// operation, dry or not, and nothing is written; an operation over an
// inline plugin's limits imports reduced, with a warning.
func TestImportTooLarge(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), func(s *api.Server) { s.ImportMaxBytes = 1 << 20 })
	doc := func(props int) map[string]any {
		return map[string]any{"document": json.RawMessage(hostiledoc.SharedBody(40, props))}
	}
	for _, dry := range []bool{true, false} {
		body := doc(400) // some 34 kB a plugin: 1 MiB passed by the 31st
		body["dry_run"] = dry
		code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, body)
		apiErr, _ := res["error"].(map[string]any)
		details, _ := apiErr["details"].(map[string]any)
		if code != http.StatusBadRequest || errCode(res) != "import_too_large" || details["limit"] != "import bytes" ||
			details["max"] != float64(1<<20) || !strings.HasPrefix(fmt.Sprint(details["operation"]), "POST /o00") ||
			!strings.Contains(errMessage(res), "BLINDEXEC_IMPORT_MAX_MB") {
			t.Fatalf("dry %v: %d %v", dry, code, res)
		}
	}
	code, res := e.do("GET", "/v1/plugins", adminToken, nil)
	if code != http.StatusOK || count(res["plugins"]) != 0 {
		t.Fatalf("a refused import wrote: %d %v", code, res)
	}
	code, res = e.do("POST", "/v1/plugins/import/openapi", adminToken, doc(plugins.DefaultSchemaLimits.Properties+1))
	warnings, _ := res["warnings"].([]any)
	if code != http.StatusOK || count(res["added"]) != 40 || len(warnings) != 40 ||
		!strings.Contains(fmt.Sprint(warnings[0]), "request body of 2001 fields made one free-form object argument (the schema has more than the limit of 2000 properties") {
		t.Fatalf("operations over a plugin's limits: %d %v", code, res)
	}
}
