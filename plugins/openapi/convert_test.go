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
		// Issue 34: authorizationCode flows name a provider.
		{"oauth2code.yaml", Options{SourceURL: "https://login.acme.test/openapi.yaml"}, false},
		{"oauth2code-swagger2.json", Options{}, false}, // Swagger 2's accessCode
		// Issue 44: invisible characters removed from what a model reads,
		// and reported per plugin.
		{"invisible.json", Options{}, false},
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
			checkGolden(t, tc.file, golden{doc.Warnings, ops, failures})
		})
	}
}

// checkGolden compares a conversion with testdata/golden/<file's base>.json
// (or writes it, with -update).
func checkGolden(t *testing.T, file string, g golden) {
	t.Helper()
	got, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))+".json")
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
}

// TestCorpusGolden: real-world documents of the corpus, converted as the
// golden files hold them. Train Travel's whole API is behind an OAuth 2.0
// authorizationCode flow (issue 34): every plugin names its provider.
// readme.io's suites give every parameter style and explode, in every
// location and in form-data encodings (realspec80: kept for multipart too),
// and every security scheme (the unsupported ones imported disabled).
func TestCorpusGolden(t *testing.T) {
	for _, name := range []string{"oas31/train-travel-api.478d1737.yaml",
		"oas31/readme-parameters-style.060d4ffb.json", "oas31/readme-security.060d4ffb.json"} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			doc, err := Load(readCorpus(t, name), name)
			if err != nil {
				t.Fatal(err)
			}
			ops, failures, err := Convert(doc, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range ops {
				if err := op.Plugin.Validate(); err != nil {
					t.Errorf("%s: %v", op.Key, err)
				}
			}
			checkGolden(t, name, golden{doc.Warnings, ops, failures})
		})
	}
}
