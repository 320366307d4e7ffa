package importer

import (
	"os"
	"testing"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins/openapi"
)

// TestClassifyWrittenAsRead: the classification of a row written from a
// converted plugin is the one read back from the row, with or without an
// administrator's setting.
func TestClassifyWrittenAsRead(t *testing.T) {
	data, err := os.ReadFile("../plugins/openapi/testdata/fidelity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load(data, "fidelity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ops, _, err := openapi.Convert(doc, openapi.Options{BaseURL: "https://api.example.com"})
	if err != nil || len(ops) == 0 {
		t.Fatalf("%d operations, %v", len(ops), err)
	}
	yes, no := "1", "0"
	for _, op := range ops {
		for _, setting := range []*string{nil, &yes, &no} {
			row, err := catalog.RowFromPlugin(op.Plugin)
			if err != nil {
				t.Fatal(err)
			}
			row.Consequential = setting
			var written, read SyncResult
			written.classifyWritten(op.Plugin, row)
			read.classify(row)
			if len(read.Consequential) != 1 || written.Consequential[row.Name] != read.Consequential[row.Name] || len(written.Consequential) != 1 {
				t.Errorf("%s, setting %v: written %v, read %v", op.Key, setting, written.Consequential, read.Consequential)
			}
		}
	}
}
