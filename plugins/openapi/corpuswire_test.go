package openapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
)

// TestCorpusWire imports real documents of the corpus against a loopback
// upstream, calls operations whose parameters serialize unusually and
// checks the request the upstream received, byte for byte: what the
// document (and, where it says nothing, what its API's own clients send)
// asks for.
func TestCorpusWire(t *testing.T) {
	tests := []struct {
		doc, op, args string
		uri, body     string
		header        map[string]string
	}{
		// Stripe declares its arrays deepObject, which OpenAPI defines for
		// objects only; Stripe reads them indexed, as its clients send
		// them (expand[0]=…), and answers "Invalid array" to expand=….
		{"stripe/spec3.2022-04-12.e0123a38.json.gz", "GET /v1/customers",
			`{"expand":["data.default_source","data.tax"],"created":{"gte":1,"lt":5},"email":"a@b.c"}`,
			"/v1/customers?created[gte]=1&created[lt]=5&email=a%40b.c&expand[0]=data.default_source&expand[1]=data.tax", "", nil},
		{"stripe/spec3.2022-04-12.e0123a38.json.gz", "POST /v1/customers",
			`{"expand":["tax"],"preferred_locales":["en","fr"],"tax_id_data":[{"type":"eu_vat","value":"DE123"}],"metadata":{"k":"v"},"name":"Ann Lee"}`,
			"/v1/customers", "expand[0]=tax&metadata[k]=v&name=Ann+Lee&preferred_locales[0]=en&preferred_locales[1]=fr&tax_id_data[0][type]=eu_vat&tax_id_data[0][value]=DE123", nil},
		{"stripe/spec3.2022-04-12.e0123a38.json.gz", "GET /v1/customers/{customer}",
			`{"customer":"cus_1","expand":["tax"]}`,
			"/v1/customers/cus_1?expand[0]=tax", "", nil},
		// readme.io's suite of every parameter style: OpenAPI's table.
		{"oas31/readme-parameters-style.060d4ffb.json", "POST /anything/path/matrix/{primitive}/{array}/{object}",
			`{"primitive":"blue","array":["blue","black"],"object":{"R":100,"G":200}}`,
			"/anything/path/matrix/;primitive=blue/;array=blue;array=black/;G=200;R=100", "", nil},
		{"oas31/readme-parameters-style.060d4ffb.json", "POST /anything/path/label/{primitive}/{array}/{object}",
			`{"primitive":"blue","array":["blue","black"],"object":{"R":100,"G":200}}`,
			"/anything/path/label/.blue/.blue.black/.G=200.R=100", "", nil},
		{"oas31/readme-parameters-style.060d4ffb.json", "GET /anything/query/form",
			`{"primitive":"blue","array":["blue","black"],"object":{"R":100,"G":200}}`,
			"/anything/query/form?array=blue,black&object=G,200,R,100&primitive=blue", "", nil},
		{"oas31/readme-parameters-style.060d4ffb.json", "GET /anything/query/spaceDelimited",
			`{"array":["blue","black"],"object":{"R":100,"G":200}}`,
			"/anything/query/spaceDelimited?array=blue%20black&object=G%20200%20R%20100", "", nil},
		{"oas31/readme-parameters-style.060d4ffb.json", "GET /anything/query/pipeDelimited",
			`{"array":["blue","black"],"object":{"R":100,"G":200}}`,
			"/anything/query/pipeDelimited?array=blue|black&object=G|200|R|100", "", nil},
		{"oas31/readme-parameters-style.060d4ffb.json", "GET /anything/query/deepObject",
			`{"object":{"R":100,"G":200}}`,
			"/anything/query/deepObject?object[G]=200&object[R]=100", "", nil},
		{"oas31/readme-parameters-style.060d4ffb.json", "GET /cookies#formNonExploded",
			`{"primitive":"blue","array":["blue","black"],"object":{"R":100,"G":200}}`,
			"/cookies", "", map[string]string{"Cookie": "array=blue,black; object=G,200,R,100; primitive=blue"}},
		{"oas31/readme-parameters-style.060d4ffb.json", "POST /anything/headers/simple",
			`{"primitive":"blue","array":["blue","black"],"object":{"R":100,"G":200}}`,
			"/anything/headers/simple", "", map[string]string{"Primitive": "blue", "Array": "blue,black", "Object": "G=200,R=100"}},
		// OpenAI's paths that hold a query of their own.
		{"oas31/openai-openapi.f85dbe22.json.gz", "GET /responses/{response_id}?beta=true",
			`{"response_id":"resp_1","include":["file_search_call.results","reasoning.encrypted_content"],"stream":false,"openai-beta":["responses_multi_agent=v1"]}`,
			"/responses/resp_1?beta=true&include=file_search_call.results&include=reasoning.encrypted_content&stream=false", "", map[string]string{"Openai-Beta": "responses_multi_agent=v1"}},
		{"oas31/openai-openapi.f85dbe22.json.gz", "DELETE /responses/{response_id}?beta=true",
			`{"response_id":"resp_1"}`,
			"/responses/resp_1?beta=true", "", nil},
	}
	up := newUpstream(t, nil)
	exec := engine.NewExecutor(egresstest.Client(t))
	converted := map[string][]Operation{}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			ops, ok := converted[tt.doc]
			if !ok {
				doc, err := Load(readCorpus(t, tt.doc), tt.doc)
				if err != nil {
					t.Fatal(err)
				}
				if ops, _, err = Convert(doc, Options{BaseURL: up.URL}); err != nil {
					t.Fatal(err)
				}
				converted[tt.doc] = ops
			}
			var op *Operation
			for i := range ops {
				if ops[i].Key == tt.op {
					op = &ops[i]
				}
			}
			if op == nil {
				t.Fatalf("%s: no operation %s", tt.doc, tt.op)
			}
			creds := map[string]string{}
			for _, k := range op.Plugin.AuthConfig.CredentialKeys() {
				creds[k] = "sk_test_0123456789"
			}
			res, err := exec.Execute(t.Context(), engine.Call{Plugin: op.Plugin, Arguments: json.RawMessage(tt.args), Credentials: creds})
			if err != nil || !res.OK {
				t.Fatalf("Execute: %v %+v", err, res.Error)
			}
			got := up.last(t)
			if got.RequestURI != tt.uri || string(got.Body) != tt.body {
				t.Errorf("sent %s %s\n%s\nwant %s\n%s", got.Method, got.RequestURI, got.Body, tt.uri, tt.body)
			}
			for k, v := range tt.header {
				if got.Header.Get(k) != v {
					t.Errorf("header %s: %q, want %q", k, got.Header.Get(k), v)
				}
			}
		})
	}
}

// A multipart field that is not a file but has a content type of its own
// (OpenAI's POST /realtime/calls: encoding sdp application/sdp, session
// application/json) is a part of that type without a filename: a filename
// makes it a file to the servers that read the form (net/http's FormValue,
// Starlette's Form, Spring's @RequestParam), which then lack the field.
func TestCorpusWireMultipart(t *testing.T) {
	doc, err := Load(readCorpus(t, "oas31/openai-openapi.f85dbe22.json.gz"), "openai")
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t, nil)
	ops, _, err := Convert(doc, Options{BaseURL: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ops, func(o Operation) bool { return o.Key == "POST /realtime/calls" })
	if i < 0 {
		t.Fatal("no POST /realtime/calls")
	}
	p := ops[i].Plugin
	creds := map[string]string{}
	for _, k := range p.AuthConfig.CredentialKeys() {
		creds[k] = "sk_test_0123456789"
	}
	res, err := engine.NewExecutor(egresstest.Client(t)).Execute(t.Context(), engine.Call{Plugin: p,
		Arguments: json.RawMessage(`{"sdp":"v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n","session":{"type":"realtime","model":"gpt-realtime"}}`), Credentials: creds})
	if err != nil || !res.OK {
		t.Fatalf("Execute: %v %+v", err, res.Error)
	}
	got := partsOf(t, up.last(t))
	want := strings.Join(partStrings([]part{
		{name: "sdp", contentType: "application/sdp", content: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n"},
		{name: "session", contentType: "application/json", content: `{"model":"gpt-realtime","type":"realtime"}`},
	}), "\n")
	if got != want {
		t.Errorf("parts:\n%s\nwant\n%s", got, want)
	}
}
