package openapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
)

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"{\n  \"openapi\": \"3.0.0\",\n  \"paths\": {,}\n}", "parse doc: line 3 column 13: invalid character ',' looking for beginning of object key string"},
		{"openapi: 3.0.0\npaths:\n  /a: [\n", "parse doc: line 3: did not find expected node content"},
		{"- a\n- b\n", "parse doc: line 1: the document is not a mapping (an object)"},
		{"info: {title: x}\n", `load doc: not an OpenAPI document: it has neither an "openapi" nor a "swagger" field`},
		{"openapi: 4.0.0\n", `load doc: OpenAPI version "4.0.0" is not supported (want 3.0 or 3.1, or Swagger 2.0)`},
		{"swagger: '1.2'\n", `load doc: Swagger version "1.2" is not supported (want 2.0)`},
	} {
		_, err := Load([]byte(tc.in), "doc")
		if err == nil || err.Error() != tc.want {
			t.Errorf("Load(%q) = %v\nwant %s", tc.in, err, tc.want)
		}
	}
}

func TestLoadYAMLValues(t *testing.T) {
	doc, err := Load([]byte("openapi: 3.1.0\ninfo: {title: T, version: 2024-01-02}\npaths:\n  /a:\n    get:\n      responses:\n        200: &ok {description: ok}\n        201: *ok\n"), "doc")
	if err != nil {
		t.Fatal(err)
	}
	info := doc.Raw["info"].(map[string]any)
	resp := doc.Raw["paths"].(map[string]any)["/a"].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)
	if info["version"] != "2024-01-02" || resp["200"] == nil || resp["201"] == nil || doc.Version != "3.1.0" || doc.Title != "T" {
		t.Errorf("decoded %v %v %q %q", info, resp, doc.Version, doc.Title)
	}
}

func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/openapi.json" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"openapi": "3.0.0"}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	client := egresstest.Client(t)
	if b, err := Fetch(ctx, client, srv.URL+"/openapi.json"); err != nil || string(b) != `{"openapi": "3.0.0"}` {
		t.Errorf("Fetch URL = %q, %v", b, err)
	}
	if _, err := Fetch(ctx, client, srv.URL+"/missing"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Fetch 404 = %v", err)
	}
	if b, err := Fetch(ctx, client, "testdata/lenient.yaml"); err != nil || len(b) == 0 {
		t.Errorf("Fetch file = %d bytes, %v", len(b), err)
	}
	if _, err := Fetch(ctx, client, "testdata/missing.yaml"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Fetch missing file = %v", err)
	}
}

func TestSelection(t *testing.T) {
	data, err := os.ReadFile("testdata/fidelity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Load(data, "fidelity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts Options
		want []string
	}{
		{Options{Methods: []string{"delete", "PUT"}}, []string{"PUT /pets/{petId}", "DELETE /pets/{petId}"}},
		{Options{Paths: []string{"/pets/*"}}, []string{"POST /pets/batch", "PUT /pets/{petId}", "DELETE /pets/{petId}"}},
		{Options{Paths: []string{"/pets/*"}, Methods: []string{"POST"}}, []string{"POST /pets/batch"}},
		{Options{OperationIDs: []string{"addNote", "uploadFile"}}, []string{"POST /files", "POST /notes"}},
		{Options{Tags: []string{"none"}}, nil},
	} {
		tc.opts.BaseURL = "https://api.example.com"
		ops, _, err := Convert(doc, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, op := range ops {
			got = append(got, op.Key)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.opts, got, tc.want)
		}
	}
}
