package schema

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/corpus"
)

const (
	stripeSpec = "stripe/spec3.2022-04-12.e0123a38.json.gz"
	openaiSpec = "oas31/openai-openapi.f85dbe22.json.gz"
)

func loadCorpus(tb testing.TB, name string) map[string]any {
	tb.Helper()
	var doc map[string]any
	if err := json.Unmarshal(corpus.Read(tb, name), &doc); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return doc
}

type operation struct {
	id       string
	body     any            // the request body schema, nil if none
	response map[string]any // the first 2xx response's JSON schema, nil if none
}

// operations lists doc's operations in a stable order.
func operations(tb testing.TB, doc map[string]any) []operation {
	lookup := OpenAPILookup(doc)
	paths, _ := doc["paths"].(map[string]any)
	var ops []operation
	for _, path := range slices.Sorted(mapsKeys(paths)) {
		item, _ := paths[path].(map[string]any)
		for _, method := range []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"} {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			id, _ := op["operationId"].(string)
			o := operation{id: id}
			if rb, ok := op["requestBody"]; ok {
				body, err := lookup.Deref(rb)
				if err != nil {
					tb.Fatalf("%s: request body: %v", id, err)
				}
				o.body = mediaSchema(body, "application/json", "application/x-www-form-urlencoded")
			}
			responses, _ := op["responses"].(map[string]any)
			for _, code := range slices.Sorted(mapsKeys(responses)) {
				if strings.HasPrefix(code, "2") {
					resp, err := lookup.Deref(responses[code])
					if err != nil {
						tb.Fatalf("%s: response %s: %v", id, code, err)
					}
					o.response, _ = mediaSchema(resp, "application/json").(map[string]any)
					break
				}
			}
			ops = append(ops, o)
		}
	}
	return ops
}

// mediaSchema returns the schema of the first of types that obj's content has.
func mediaSchema(obj any, types ...string) any {
	content, _ := obj.(map[string]any)["content"].(map[string]any)
	for _, t := range types {
		if media, ok := content[t].(map[string]any); ok {
			return media["schema"]
		}
	}
	return nil
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestCorpus(t *testing.T) {
	for _, name := range []string{stripeSpec, openaiSpec} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			doc := loadCorpus(t, name)
			lookup := OpenAPILookup(doc)
			var bodies int
			for _, op := range operations(t, doc) {
				if op.body != nil {
					bodies++
					for _, opts := range []Options{{Direction: Request}, {Direction: Request, Strict: true}} {
						res, err := Resolve(op.body, lookup, opts)
						if err != nil {
							t.Errorf("%s: request body: %v", op.id, err)
							continue
						}
						if res.Schema["type"] != "object" {
							t.Errorf("%s: request body type %v, want object", op.id, res.Schema["type"])
						}
						for _, w := range res.Warnings {
							// Request bodies of real APIs must stay whole under the defaults.
							if strings.Contains(w, "depth limit") || strings.Contains(w, "node limit") {
								t.Errorf("%s: %s", op.id, w)
							}
						}
					}
				}
				if op.response != nil {
					for _, opts := range []Options{{Direction: Response, MaxNodes: 2000}, {Direction: Response, KeepRefs: true, Raw: true, MaxNodes: 2000}} {
						if _, err := Resolve(op.response, lookup, opts); err != nil {
							t.Errorf("%s: response: %v", op.id, err)
						}
					}
				}
			}
			if bodies == 0 {
				t.Error("no request bodies found")
			}
		})
	}
}

func TestStripePostCustomers(t *testing.T) {
	doc := loadCorpus(t, stripeSpec)
	op := findOperation(t, doc, "PostCustomers")
	res, err := Resolve(op.body, OpenAPILookup(doc), Options{Direction: Request})
	if err != nil {
		t.Fatal(err)
	}
	props, _ := res.Schema["properties"].(map[string]any)
	for _, name := range []string{"email", "metadata", "address", "name", "phone", "invoice_settings", "tax_id_data"} {
		if _, ok := props[name]; !ok {
			t.Errorf("property %s missing; have %v", name, slices.Sorted(mapsKeys(props)))
		}
	}
	if len(res.Warnings) > 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
	// The nested address object survives normalization.
	addr, _ := props["address"].(map[string]any)
	if !strings.Contains(encode(t, addr), `"line1"`) {
		t.Errorf("address lost its fields: %s", encode(t, addr))
	}
}

func findOperation(tb testing.TB, doc map[string]any, id string) operation {
	for _, op := range operations(tb, doc) {
		if op.id == id {
			return op
		}
	}
	tb.Fatalf("operation %s not found", id)
	return operation{}
}

func BenchmarkResolveStripePostCustomers(b *testing.B) {
	doc := loadCorpus(b, stripeSpec)
	op := findOperation(b, doc, "PostCustomers")
	lookup := OpenAPILookup(doc)
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"normalized", Options{Direction: Request}},
		{"strict", Options{Direction: Request, Strict: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Resolve(op.body, lookup, c.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A reference-heavy, recursive schema: Stripe's customer object as a
// response.
func BenchmarkResolveStripeCustomerResponse(b *testing.B) {
	doc := loadCorpus(b, stripeSpec)
	op := findOperation(b, doc, "GetCustomersCustomer")
	lookup := OpenAPILookup(doc)
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"normalized", Options{Direction: Response}},
		{"keeprefs", Options{Direction: Response, KeepRefs: true, Raw: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Resolve(op.response, lookup, c.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
