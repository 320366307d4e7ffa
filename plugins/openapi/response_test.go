package openapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestResponseWords: an operation records the property names of its first
// success response that has a schema (OpenAPI 3's content, Swagger 2's
// schema, through references), for search only: the plugin's document
// does not carry them.
func TestResponseWords(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      map[string]string // by key
	}{
		{"OpenAPI 3, a referenced response",
			`{"openapi":"3.0.3","info":{"title":"T","version":"1"},"servers":[{"url":"https://api.example.com"}],
			"paths":{"/invoices":{"get":{"operationId":"getInvoices","responses":{
				"404":{"description":"no","content":{"application/json":{"schema":{"properties":{"Error":{}}}}}},
				"200":{"$ref":"#/components/responses/Invoices"}}},
			"delete":{"operationId":"deleteInvoices","responses":{"204":{"description":"gone"}}}}},
			"components":{"responses":{"Invoices":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Invoices"}}}}},
			"schemas":{"Invoices":{"properties":{"Invoices":{"type":"array","items":{"$ref":"#/components/schemas/Invoice"}}}},
			"Invoice":{"properties":{"AmountDue":{"type":"number"},"InvoiceNumber":{"type":"string"}}}}}}`,
			map[string]string{"GET /invoices": "Invoices AmountDue InvoiceNumber", "DELETE /invoices": ""}},
		{"Swagger 2",
			`{"swagger":"2.0","info":{"title":"T","version":"1"},"host":"api.example.com","schemes":["https"],
			"paths":{"/tracks/{id}/features":{"get":{"operationId":"getFeatures","parameters":[{"name":"id","in":"path","required":true,"type":"string"}],
			"responses":{"200":{"description":"ok","schema":{"$ref":"#/definitions/Features"}}}}}},
			"definitions":{"Features":{"properties":{"danceability":{"type":"number"},"energy":{"type":"number"}}}}}`,
			map[string]string{"GET /tracks/{id}/features": "danceability energy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := Load([]byte(tc.doc), "doc.json")
			if err != nil {
				t.Fatal(err)
			}
			ops, _, err := Convert(doc, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) != len(tc.want) {
				t.Fatalf("%d operations, want %d", len(ops), len(tc.want))
			}
			for _, op := range ops {
				if got := strings.Join(op.Plugin.ResponseWords, " "); got != tc.want[op.Key] {
					t.Errorf("%s: response words %q, want %q", op.Key, got, tc.want[op.Key])
				}
				if doc, _ := json.Marshal(op.Plugin); strings.Contains(string(doc), "AmountDue") || strings.Contains(string(doc), "danceability") {
					t.Errorf("%s: the plugin's document carries its response words: %s", op.Key, doc)
				}
			}
		})
	}
}
