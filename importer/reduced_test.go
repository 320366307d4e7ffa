package importer_test

import (
	"context"
	"testing"

	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/corpus"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins/openapi"
)

// TestReducedSyncStable: a sync of DocuSign's document, 37 of whose
// operations import reduced (cut at several levels), changes nothing
// when forced again: the reductions and what the rows read back are the
// same.
func TestReducedSyncStable(t *testing.T) {
	data := corpus.File(t, "../toolsearch/testdata/crowd-docusign.net.json.gz")
	st := testdb.Open(t, "sqlite")
	for i, opts := range []openapi.Options{{}, {Force: true}} {
		doc, err := openapi.Load(data, "docusign.json")
		if err != nil {
			t.Fatal(err)
		}
		res, err := importer.OpenAPI(context.Background(), st, "docusign.json", doc, opts, false)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && (len(res.Added) != 402 || len(res.Failed) != 0) {
			t.Fatalf("%d added, %d failed", len(res.Added), len(res.Failed))
		}
		if i == 1 && (len(res.Changed) != 0 || len(res.Added) != 0 || len(res.Unchanged) != 402) {
			t.Errorf("forced again: %d changed %.200q, %d added, %d unchanged", len(res.Changed), res.Changed, len(res.Added), len(res.Unchanged))
		}
	}
}
