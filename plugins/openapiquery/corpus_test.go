package openapiquery

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/corpus"

	"github.com/blindexec/blindexec/plugins/openapi"
)

// readCorpus returns a corpus document's bytes, skipping the test when
// the corpus is absent.
func readCorpus(tb testing.TB, name string) []byte { return corpus.Read(tb, name) }

var corpusDocs = []string{
	"stripe/spec3.2022-04-12.e0123a38.json.gz",
	"stripe/spec3.2023-09-12.63a67463.yaml.gz",
	"oas31/openai-openapi.f85dbe22.json.gz",
	"oas31/readme-parameters-style.060d4ffb.json",
	"oas31/readme-schema-types.060d4ffb.json",
	"oas31/readme-security.060d4ffb.json",
	"oas31/redocly-museum.2770b2b2.yaml",
	"oas31/train-travel-api.478d1737.yaml",
}

// TestCorpus resolves the request and responses of the operations of the
// real documents (at most about 60 a document, evenly spread: Stripe's
// densely linked schemas cost tens of milliseconds an operation): no
// error, every $ref left resolvable in components.
func TestCorpus(t *testing.T) {
	for _, name := range corpusDocs {
		t.Run(filepath.Base(name), func(t *testing.T) {
			doc, err := openapi.Load(readCorpus(t, name), name)
			if err != nil {
				t.Fatal(err)
			}
			x := NewIndex(doc)
			kept, ops := 0, x.Operations()
			step := max(1, len(ops)/60)
			for i := 0; i < len(ops); i += step {
				o := ops[i]
				req, err := x.RequestSchema(o.id())
				if err != nil {
					t.Errorf("%s: request: %v", o.key(), err)
					continue
				}
				resp, err := x.ResponseSchema(o.id())
				if err != nil {
					t.Errorf("%s: responses: %v", o.key(), err)
					continue
				}
				refs := refsResolve(t, req, req.Components)
				refs = append(refs, refsResolve(t, resp, resp.Components)...)
				if len(refs) > 0 {
					kept++
				}
			}
			t.Logf("%d operations, %d of those checked with $refs kept", len(ops), kept)
			if strings.HasPrefix(name, "stripe/") && kept == 0 {
				t.Error("Stripe's recursive schemas (customer, charge, ...) came back without any $ref")
			}
		})
	}
}

func TestCorpusSearch(t *testing.T) {
	for _, tc := range []struct {
		doc, query, method, want string
	}{
		{"stripe/spec3.2023-09-12.63a67463.yaml.gz", "customers", "POST", "PostCustomers"},
		{"stripe/spec3.2022-04-12.e0123a38.json.gz", "payment intents confirm", "", "PostPaymentIntentsIntentConfirm"},
		{"oas31/openai-openapi.f85dbe22.json.gz", "chat completion", "POST", "createChatCompletion"},
		{"oas31/train-travel-api.478d1737.yaml", "bookings", "GET", "get-bookings"},
	} {
		doc, err := openapi.Load(readCorpus(t, tc.doc), tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := NewIndex(doc).SearchOperations(Query{Text: tc.query, Method: tc.method, Match: AllFields}, 5)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ids(got), tc.want) {
			t.Errorf("%s: %q %s: top 5 %v, want %s among them", tc.doc, tc.query, tc.method, ids(got), tc.want)
		}
	}
}
