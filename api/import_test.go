package api_test

import (
	"net/http"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
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
