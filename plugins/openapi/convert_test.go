package openapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden is a conversion as the golden files hold it.
type golden struct {
	Warnings   []string    `json:"document_warnings,omitempty"`
	Operations []Operation `json:"operations"`
	Failures   []Failure   `json:"failures,omitempty"`
}

func TestConvertGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		opts Options
		port bool // fill in the server's port (PORT), as the fidelity test's server does
	}{
		{"fidelity.yaml", Options{SourceURL: "http://127.0.0.1:8080/openapi.yaml"}, true},
		{"seed002.yaml", Options{BaseURL: "https://runbook.example.com/mcp"}, false},
		{"swagger2.json", Options{Prefix: "shop"}, false},
		{"lenient.yaml", Options{}, false},
		// Issue 17: shapes a live service here cannot produce.
		{"pydantic2.json", Options{}, false},
		{"oas31.yaml", Options{}, false},
		{"springdoc.json", Options{}, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if tc.port {
				data = bytes.ReplaceAll(data, []byte("PORT"), []byte("8080"))
			}
			doc, err := Load(data, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			ops, failures, err := Convert(doc, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range ops {
				if err := op.Plugin.Validate(); err != nil {
					t.Errorf("%s: %v", op.Key, err)
				}
			}
			got, err := json.MarshalIndent(golden{doc.Warnings, ops, failures}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", strings.TrimSuffix(tc.file, filepath.Ext(tc.file))+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the conversion (run with -update and review the diff):\n%s", path, got)
			}
		})
	}
}
