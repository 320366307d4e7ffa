package plugins

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestParametersGolden converts each testdata/params/NAME.json as the
// engine reads a plugin's parameters, and compares with NAME.golden.json:
// "compiled", the schema validated against (OpenAPI 3.0 nullable made a
// type), and "llm", the schema the LLM sees (oneOf shown as anyOf).
func TestParametersGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/params/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(in, ".json")
		t.Run(filepath.Base(name), func(t *testing.T) {
			params, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			compiled, err := decodeParameters(params, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := &Plugin{Parameters: params}
			got, err := json.MarshalIndent(map[string]any{"compiled": compiled, "llm": json.RawMessage(p.LLMParameters(nil))}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := name + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs (rerun with -update to accept):\n%s", golden, got)
			}
		})
	}
}
