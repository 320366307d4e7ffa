package client

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "render openapi30.json again")

// TestOpenAPI30Rendered renders ../openapi.json in OpenAPI 3.0 for
// generators that read no 3.1 (oapi-codegen among them) and fails when
// the committed openapi30.json differs (-update rewrites it).
func TestOpenAPI30Rendered(t *testing.T) {
	src, err := os.ReadFile("../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := render30(src)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("openapi30.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("openapi30.json")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("openapi30.json is not ../openapi.json rendered in 3.0 (%v): run go generate ./api/client", err)
	}
}

// render30 renders an OpenAPI 3.1 description in 3.0: a type list
// becomes its one type (or none), "null" among the types or the oneOf
// becomes nullable, const becomes a one-value enum, and the 3.1-only
// fields of info go.
func render30(src []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	doc["openapi"] = "3.0.3"
	info := doc["info"].(map[string]any)
	delete(info, "summary")
	if l, ok := info["license"].(map[string]any); ok {
		delete(l, "identifier")
	}
	walk30(doc)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(doc)
	return out.Bytes(), err
}

func walk30(v any) {
	switch t := v.(type) {
	case map[string]any:
		to30(t)
		for _, c := range t {
			walk30(c)
		}
	case []any:
		for _, c := range t {
			walk30(c)
		}
	}
}

// to30 renders one schema's 3.1 keywords (a map that is no schema has
// none of them).
func to30(s map[string]any) {
	if types, ok := s["type"].([]any); ok {
		rest := slices.DeleteFunc(slices.Clone(types), func(x any) bool { return x == "null" })
		if len(rest) < len(types) {
			s["nullable"] = true
		}
		if len(rest) == 1 {
			s["type"] = rest[0]
		} else {
			delete(s, "type") // any of several: 3.0 has no list
		}
	}
	if c, ok := s["const"]; ok {
		delete(s, "const")
		s["enum"] = []any{c}
	}
	if alts, ok := s["oneOf"].([]any); ok {
		isNull := func(x any) bool { m, _ := x.(map[string]any); return len(m) == 1 && m["type"] == "null" }
		rest := slices.DeleteFunc(slices.Clone(alts), isNull)
		if len(rest) == len(alts) {
			return
		}
		s["nullable"] = true
		if len(rest) > 1 {
			s["oneOf"] = rest
			return
		}
		delete(s, "oneOf")
		one := rest[0].(map[string]any)
		if _, isRef := one["$ref"]; isRef {
			s["allOf"] = []any{one}
			return
		}
		for k, v := range one {
			s[k] = v
		}
	}
}

// oapiCodegen is the generator of client.gen.go, as doc.go's go:generate
// runs it.
const oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"

// TestClientGenerated generates the client again from openapi30.json and
// fails when the committed client.gen.go differs. The generator comes
// from the module proxy (or the module cache): without either the test
// skips, except in CI.
func TestClientGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the generator is built")
	}
	cfg, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "client.gen.go")
	cfg = regexp.MustCompile(`(?m)^output: .*$`).ReplaceAll(cfg, []byte("output: "+out))
	if err := os.WriteFile(filepath.Join(dir, "oapi-codegen.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", oapiCodegen, "-config", filepath.Join(dir, "oapi-codegen.yaml"), "openapi30.json")
	if msg, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s did not run (no module proxy?): %v\n%s", oapiCodegen, err, msg)
		}
		t.Fatalf("%s: %v\n%s", oapiCodegen, err, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("client.gen.go")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("client.gen.go is not what %s generates from openapi30.json (%v): run go generate ./api/client", oapiCodegen, err)
	}
}
