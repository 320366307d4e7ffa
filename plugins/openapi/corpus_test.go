package openapi

import (
	"path/filepath"
	"testing"

	"github.com/blindexec/blindexec/internal/corpus"
)

// corpusCounts are the operations each corpus document converts to, and
// those that fail; a change is a regression or an improvement to look at.
var corpusCounts = map[string]struct{ ops, failed int }{
	"stripe/spec3.2022-04-12.e0123a38.json.gz":    {417, 0},
	"stripe/spec3.2023-09-12.63a67463.yaml.gz":    {468, 0},
	"oas31/openai-openapi.f85dbe22.json.gz":       {288, 0},
	"oas31/oai-non-oauth-scopes.e77481c7.json":    {1, 0},
	"oas31/oai-webhook-example.e77481c7.json":     {0, 0},
	"oas31/readme-parameters-style.060d4ffb.json": {25, 0},
	"oas31/readme-schema-types.060d4ffb.json":     {23, 0},
	"oas31/readme-security.060d4ffb.json":         {15, 0},
	"oas31/redocly-museum.2770b2b2.yaml":          {8, 0},
	"oas31/train-travel-api.478d1737.yaml":        {7, 0},
}

// readCorpus returns a corpus document's bytes, skipping the test when
// the corpus is absent.
func readCorpus(tb testing.TB, name string) []byte { return corpus.Read(tb, name) }

func TestCorpus(t *testing.T) {
	for name, want := range corpusCounts {
		t.Run(filepath.Base(name), func(t *testing.T) {
			doc, err := Load(readCorpus(t, name), name)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			ops, failures, err := Convert(doc, Options{BaseURL: baseURLIfNone(doc)})
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			warnings := 0
			for _, op := range ops {
				warnings += len(op.Warnings)
				if err := op.Plugin.Validate(); err != nil {
					t.Errorf("%s: invalid plugin: %v", op.Key, err)
				}
			}
			for _, f := range failures {
				if f.Reason == "" {
					t.Errorf("%s: failure without a reason", f.Key)
				}
				t.Logf("failed: %s: %s", f.Key, f.Reason)
			}
			t.Logf("%s: %d operations, %d failed, %d warnings (document: %d)", name, len(ops), len(failures), warnings, len(doc.Warnings))
			if len(ops) != want.ops || len(failures) != want.failed {
				t.Errorf("%d operations, %d failed; want %d and %d", len(ops), len(failures), want.ops, want.failed)
			}
		})
	}
}

// baseURLIfNone gives documents without servers a base URL: the corpus
// tests conversion, not server selection.
func baseURLIfNone(doc *Document) string {
	if doc.Raw["servers"] == nil {
		return "https://api.example.com"
	}
	return ""
}
