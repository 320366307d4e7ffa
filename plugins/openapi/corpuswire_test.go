package openapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
)

// readme.io's suite of parameter styles, and the values its operations
// take: OpenAPI's table of style examples (primitive, array, object).
const (
	styles        = "oas31/readme-parameters-style.060d4ffb.json"
	allStyled     = `{"primitive":"blue","array":["blue","black"],"object":{"R":100,"G":200}}`
	listAndObject = `{"array":["blue","black"],"object":{"R":100,"G":200}}`
)

// gitHubDoc names GitHub's description (readGitHub) among the corpus's.
const gitHubDoc = "github"

// conversions caches each document's operations, converted once (with
// the options of its first use).
type conversions map[string][]Operation

// op is the operation key of the document doc.
func (c conversions) op(t *testing.T, doc, key string, opts Options) *Operation {
	t.Helper()
	ops, ok := c[doc]
	if !ok {
		d, err := Load(readWireDoc(t, doc), doc)
		if err != nil {
			t.Fatal(err)
		}
		if ops, _, err = Convert(d, opts); err != nil {
			t.Fatal(err)
		}
		c[doc] = ops
	}
	i := slices.IndexFunc(ops, func(o Operation) bool { return o.Key == key })
	if i < 0 {
		t.Fatalf("%s: no operation %s", doc, key)
	}
	return &ops[i]
}

// readWireDoc reads a corpus document, or GitHub's.
func readWireDoc(tb testing.TB, name string) []byte {
	if name == gitHubDoc {
		return readGitHub(tb)
	}
	return readCorpus(tb, name)
}

// TestCorpusWire imports real documents of the corpus against a loopback
// upstream, calls operations whose parameters serialize unusually and
// checks the request the upstream received, byte for byte: what the
// document (and, where it says nothing, what its API's own clients send)
// asks for.
func TestCorpusWire(t *testing.T) {
	tests := []struct {
		doc, op, args string
		uri, body     string // body: the exact bytes, or a multipart body's parts (partStrings, one a line)
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
		{styles, "POST /anything/path/matrix/{primitive}/{array}/{object}",
			allStyled,
			"/anything/path/matrix/;primitive=blue/;array=blue;array=black/;G=200;R=100", "", nil},
		{styles, "POST /anything/path/label/{primitive}/{array}/{object}",
			allStyled,
			"/anything/path/label/.blue/.blue.black/.G=200.R=100", "", nil},
		{styles, "GET /anything/query/form",
			allStyled,
			"/anything/query/form?array=blue,black&object=G,200,R,100&primitive=blue", "", nil},
		{styles, "GET /anything/query/spaceDelimited",
			listAndObject,
			"/anything/query/spaceDelimited?array=blue%20black&object=G%20200%20R%20100", "", nil},
		{styles, "GET /anything/query/pipeDelimited",
			listAndObject,
			"/anything/query/pipeDelimited?array=blue|black&object=G|200|R|100", "", nil},
		{styles, "GET /anything/query/deepObject",
			`{"object":{"R":100,"G":200}}`,
			"/anything/query/deepObject?object[G]=200&object[R]=100", "", nil},
		{styles, "GET /cookies#formNonExploded",
			allStyled,
			"/cookies", "", map[string]string{"Cookie": "array=blue,black; object=G,200,R,100; primitive=blue"}},
		{styles, "POST /anything/headers/simple",
			allStyled,
			"/anything/headers/simple", "", map[string]string{"Primitive": "blue", "Array": "blue,black", "Object": "G=200,R=100"}},
		// Stripe offers basic (its key as the user name, no password) or
		// bearer; the first it lists is used (OpenAPI: security
		// requirements are alternatives).
		{"stripe/spec3.2023-09-12.63a67463.yaml.gz", "GET /v1/balance", `{}`,
			"/v1/balance", "", map[string]string{"Authorization": "Basic c2tfdGVzdF8wMTIzNDU2Nzg5Og=="}},
		// Path values with reserved characters stay in their segment, each
		// byte not unreserved percent-encoded (RFC 6570 §3.2.2, simple
		// expansion; RFC 3986 §2.1): / ? # % and UTF-8.
		{"stripe/spec3.2023-09-12.63a67463.yaml.gz", "GET /v1/customers/{customer}",
			`{"customer":"cus/1?x#y%z é","expand":["tax"]}`,
			"/v1/customers/cus%2F1%3Fx%23y%25z%20%C3%A9?expand[0]=tax", "", nil},
		// An empty matrix value is ";name" alone (RFC 6570 §3.2.7; OpenAPI's
		// style table: matrix, empty, ";color").
		{styles, "GET /anything/path/matrix/{primitive}/{array}/{object}",
			`{"primitive":"","array":["blue","black"],"object":{"R":100,"G":200}}`,
			"/anything/path/matrix/;primitive/;array=blue,black/;object=G,200,R,100", "", nil},
		// A form-style query object, exploded by default, is its keys
		// (RFC 6570 §3.2.8 {?x*}; OpenAPI's table: R=100&G=200).
		{styles, "GET /anything/query",
			`{"primitive":"a b&c=d+e","array":["blue","black"],"object":{"R":100,"G":200}}`,
			"/anything/query?array=blue&array=black&G=200&R=100&primitive=a%20b%26c%3Dd%2Be", "", nil},
		// OpenAPI 3.1's Encoding Object gives multipart/form-data fields a
		// style (and then ignores contentType); Appendix C puts each pair's
		// name in the part's name and its value in the part, unescaped.
		{styles, "POST /anything/form-data/form",
			allStyled,
			"/anything/form-data/form", "array|||blue,black\nobject|||G,200,R,100\nprimitive|||blue", nil},
		{styles, "PUT /anything/form-data/form",
			allStyled,
			"/anything/form-data/form", "array|||blue\narray|||black\nG|||200\nR|||100\nprimitive|||blue", nil},
		{styles, "POST /anything/form-data/pipeDelimited",
			listAndObject,
			"/anything/form-data/pipeDelimited", "array|||blue|black\nobject|||G|200|R|100", nil},
		{styles, "GET /anything/form-data/spaceDelimited",
			listAndObject,
			"/anything/form-data/spaceDelimited", "array|||blue black\nobject|||G 200 R 100", nil},
		{styles, "POST /anything/form-data/deepObject",
			`{"primitive":"blue","object":{"R":100,"G":200}}`,
			"/anything/form-data/deepObject", "object[G]|||200\nobject[R]|||100\nprimitive|||blue", nil},
		// Stripe's one multipart operation: its deepObject fields as Stripe's
		// clients send them (file_link_data[create]=true), not JSON.
		{"stripe/spec3.2023-09-12.63a67463.yaml.gz", "POST /v1/files",
			`{"file":"hello","purpose":"dispute_evidence","file_link_data":{"create":true,"metadata":{"k":"v"}},"expand":["link"]}`,
			"/v1/files", "expand[0]|||link\nfile|file|application/octet-stream|hello\nfile_link_data[create]|||true\nfile_link_data[metadata][k]|||v\npurpose|||dispute_evidence", nil},
		// Without an encoding, an object part's contentType is
		// application/json (OpenAPI's Encoding Object defaults); null is
		// undefined (RFC 6570 §2.3) and sent as no part, as in a query.
		{"oas31/openai-openapi.f85dbe22.json.gz", "POST /files",
			`{"file":"x","purpose":"batch","expires_after":{"anchor":"created_at","seconds":3600}}`,
			"/files", `expires_after||application/json|{"anchor":"created_at","seconds":3600}` + "\nfile|file|application/octet-stream|x\npurpose|||batch", nil},
		{"oas31/openai-openapi.f85dbe22.json.gz", "POST /audio/transcriptions",
			`{"file":"x","model":"whisper-1","timestamp_granularities":["word","segment"],"stream":null}`,
			"/audio/transcriptions", "file|file|application/octet-stream|x\nmodel|||whisper-1\ntimestamp_granularities|||word\ntimestamp_granularities|||segment", nil},
		// Every security scheme the engine applies, as readme.io's suite
		// declares them (OpenAPI's Security Scheme Object).
		{"oas31/readme-security.060d4ffb.json", "GET /anything/apiKey", `{}`,
			"/anything/apiKey?apiKey=sk_test_0123456789", "", nil},
		{"oas31/readme-security.060d4ffb.json", "POST /anything/apiKey", `{}`,
			"/anything/apiKey", "", map[string]string{"Cookie": "api_key=sk_test_0123456789"}},
		{"oas31/readme-security.060d4ffb.json", "PUT /anything/apiKey", `{}`,
			"/anything/apiKey", "", map[string]string{"X-Api-Key": "sk_test_0123456789"}},
		{"oas31/readme-security.060d4ffb.json", "POST /anything/basic", `{}`,
			"/anything/basic", "", map[string]string{"Authorization": "Basic c2tfdGVzdF8wMTIzNDU2Nzg5Og=="}},
		{"oas31/readme-security.060d4ffb.json", "POST /anything/bearer", `{}`,
			"/anything/bearer", "", map[string]string{"Authorization": "Bearer sk_test_0123456789"}},
		{"oas31/readme-security.060d4ffb.json", "PUT /anything/bearer", `{}`,
			"/anything/bearer", "", map[string]string{"Authorization": "Bearer sk_test_0123456789"}},
		{"oas31/readme-security.060d4ffb.json", "POST /anything/no-auth", `{}`,
			"/anything/no-auth", "", map[string]string{"Authorization": "", "Cookie": ""}},
		// GitHub marks contents' path x-multi-segment, yet its clients send
		// a slash in it as %2F (octokit's {path}, RFC 6570 simple expansion),
		// which GitHub reads: the value stays one segment.
		{gitHubDoc, "GET /repos/{owner}/{repo}/contents/{path}",
			`{"owner":"octo","repo":"hello","path":"docs/a b#1.md","ref":"heads/main"}`,
			"/repos/octo/hello/contents/docs%2Fa%20b%231.md?ref=heads%2Fmain", "", nil},
		// A body that is not fields is the argument's text as it is, of the
		// type the document names: text/plain, application/octet-stream.
		{gitHubDoc, "POST /markdown/raw", `{"body":"# Hi & <b>bye</b>"}`,
			"/markdown/raw", "# Hi & <b>bye</b>", map[string]string{"Content-Type": "text/plain"}},
		{gitHubDoc, "POST /repos/{owner}/{repo}/releases/{release_id}/assets",
			`{"owner":"octo","repo":"hello","release_id":1,"name":"notes v1.txt","body":"line 1\nline 2"}`,
			"/repos/octo/hello/releases/1/assets?name=notes%20v1.txt", "line 1\nline 2", map[string]string{"Content-Type": "application/octet-stream"}},
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
	converted := conversions{}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			op := converted.op(t, tt.doc, tt.op, Options{BaseURL: up.URL})
			creds := map[string]string{}
			for _, k := range op.Plugin.AuthConfig.CredentialKeys() {
				creds[k] = "sk_test_0123456789"
				if k == op.Plugin.AuthConfig.Password {
					creds[k] = "" // as Stripe's keys are sent: the key as the user, no password
				}
			}
			res, err := exec.Execute(t.Context(), engine.Call{Plugin: op.Plugin, Arguments: json.RawMessage(tt.args), Credentials: creds})
			if err != nil || !res.OK {
				t.Fatalf("Execute: %v %+v", err, res.Error)
			}
			got := up.last(t)
			body := string(got.Body)
			if strings.HasPrefix(got.Header.Get("Content-Type"), "multipart/") {
				body = partsOf(t, got)
			}
			if got.RequestURI != tt.uri || body != tt.body {
				t.Errorf("sent %s %s\n%s\nwant %s\n%s", got.Method, got.RequestURI, body, tt.uri, tt.body)
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

// TestCorpusServers: an operation's servers win over its path item's and
// the document's (OpenAPI's Operation Object: "an alternative servers
// array to service this operation"), the first listed of each is taken,
// and the operation's path, a query of its own included, follows the
// server's path as written.
func TestCorpusServers(t *testing.T) {
	tests := []struct{ doc, op, base string }{
		{"stripe/spec3.2023-09-12.63a67463.yaml.gz", "POST /v1/files", "https://files.stripe.com/v1/files"},
		{"stripe/spec3.2023-09-12.63a67463.yaml.gz", "GET /v1/balance", "https://api.stripe.com/v1/balance"},
		{gitHubDoc, "POST /repos/{owner}/{repo}/releases/{release_id}/assets", "https://uploads.github.com/repos/{owner}/{repo}/releases/{release_id}/assets"},
		{gitHubDoc, "GET /repos/{owner}/{repo}/contents/{path}", "https://api.github.com/repos/{owner}/{repo}/contents/{path}"},
		{"oas31/openai-openapi.f85dbe22.json.gz", "GET /responses/{response_id}?beta=true", "https://api.openai.com/v1/responses/{response_id}?beta=true"},
		{"oas31/train-travel-api.478d1737.yaml", "GET /stations", "https://try.microcks.io/rest/Train+Travel+API/1.0.0/stations"},
	}
	converted := conversions{}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			if got := converted.op(t, tt.doc, tt.op, Options{}).Plugin.Execution.BaseURL; got != tt.base {
				t.Errorf("base_url %s, want %s", got, tt.base)
			}
		})
	}
}
