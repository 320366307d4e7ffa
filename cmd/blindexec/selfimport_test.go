package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCLIImportsOwnAPI: `blindexec import openapi` takes the engine's own
// description (api/openapi.json, as GET /v1/openapi.json serves it) with no
// operation failed (issue 45 point 2); the api package's
// TestEngineImportsItsOwnAPI calls a route through the result.
func TestCLIImportsOwnAPI(t *testing.T) {
	c := newCLI(t)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	b, err := os.ReadFile("../../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	ops := 0
	for _, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				ops++
			}
		}
	}
	code, out, errs := c.run("", "import", "openapi", "../../api/openapi.json", "--base-url", "http://127.0.0.1:8080")
	if code != 0 {
		t.Fatalf("import openapi of the engine's own description: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "failed 0") {
		t.Errorf("an operation failed:\n%s\n%s", out, errs)
	}
	m := regexp.MustCompile(`added (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no count of added operations in %q", out)
	}
	if n, _ := strconv.Atoi(m[1]); n != ops {
		t.Errorf("added %d plugins, the description has %d operations:\n%s", n, ops, out)
	}
}
