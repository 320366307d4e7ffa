package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestUnknownFieldsNamed: a field the engine does not know, in
// /v1/execute or /v1/runs, answers 400 unknown_field naming it (nested
// ones by their path) and what is accepted there.
func TestUnknownFieldsNamed(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	llm := openaitest.New(t)
	e := newEnv(t, st, withModel(llm))
	if code, _ := e.do("POST", "/v1/plugins", adminToken, seedPlugin(t, up.URL)); code != http.StatusCreated {
		t.Fatal(code)
	}
	for _, tc := range []struct {
		path  string
		body  any
		field string
	}{
		{"/v1/execute", map[string]any{"name": "search_company_basic", "arguments": map[string]any{"keyword": "x"}, "username": 7}, "username"},
		{"/v1/execute", `{"name": "search_company_basic", "fixed_params": {}, "timeout_ms": 5}`, "timeout_ms"},
		{"/v1/runs", seedPayload(t, up.URL, map[string]any{"tools": []any{}}), "tools"},
		{"/v1/runs", seedPayload(t, up.URL, map[string]any{"options": map[string]any{"max_steps": 2, "max_tokens": 5}}), "options.max_tokens"},
	} {
		code, body := e.do("POST", tc.path, serviceToken, tc.body)
		errObj, _ := body["error"].(map[string]any)
		details, _ := errObj["details"].(map[string]any)
		if code != http.StatusBadRequest || errObj["code"] != "unknown_field" || details["field"] != tc.field ||
			!strings.HasPrefix(errObj["message"].(string), tc.field+": unknown field") {
			t.Errorf("%s with %q: %d %v", tc.path, tc.field, code, body)
		}
	}
	// Known fields in another case are what encoding/json accepts: not unknown.
	if code, body := e.do("POST", "/v1/execute", serviceToken, `{"Name": "search_company_basic", "arguments": {"keyword": "x"}, "credentials": {"QCC_KEY": "k-123456789012", "QCC_SECRET": "s-123456789012"}}`); code != http.StatusOK {
		t.Errorf("case-insensitive known field: %d %v", code, body)
	}
	if len(llm.Requests()) != 0 {
		t.Fatal("a refused payload reached the model")
	}
}

// TestRunErrorsSayWhatFailed: a payload error is not called a plugin error.
func TestRunErrorsSayWhatFailed(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	e := newEnv(t, st, withModel(openaitest.New(t)))
	code, body := e.do("POST", "/v1/runs", serviceToken, seedPayload(t, up.URL, map[string]any{"messages": []map[string]string{{"role": "wizard", "content": "x"}}}))
	msg := errMessage(body)
	if code != http.StatusBadRequest || strings.Contains(msg, "invalid plugin") || !strings.Contains(msg, "messages[0].role") {
		t.Fatalf("bad message role: %d %s", code, msg)
	}
}

func TestEmptyCredentialIsBadRequest(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	for _, body := range []any{map[string]string{"value": ""}} {
		code, out := e.do("PUT", "/v1/credentials/7/QCC_KEY", adminToken, body)
		if code != http.StatusBadRequest || !strings.Contains(errMessage(out), "value: an empty value is a credential only for a key read as a basic-auth password") {
			t.Errorf("empty value: %d %v", code, out)
		}
	}
	req, _ := http.NewRequest("PUT", e.url+"/v1/credentials/7/QCC_KEY", strings.NewReader(""))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("empty text/plain value: %d", resp.StatusCode)
	}
}

// TestReadyzNeedsMigratedDatabase: /readyz is 503 until the schema is up
// to date, then 200.
func TestReadyzNeedsMigratedDatabase(t *testing.T) {
	for _, kind := range testdb.Kinds {
		t.Run(kind, func(t *testing.T) {
			st := testdb.Unmigrated(t, kind)
			e := newEnv(t, st)
			code, body := e.do("GET", "/readyz", "", nil)
			if code != http.StatusServiceUnavailable || !strings.Contains(errMessage(body), "blindexec migrate") {
				t.Fatalf("unmigrated: %d %v", code, body)
			}
			if err := st.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			if code, body := e.do("GET", "/readyz", "", nil); code != http.StatusOK {
				t.Fatalf("migrated: %d %v", code, body)
			}
		})
	}
}

// TestPluginMeaningCheckedOnWrite: POST and PUT refuse a document whose
// template, fixed params or required credentials cannot work, naming the
// field; an MCP plugin is checked against its registered server.
func TestPluginMeaningCheckedOnWrite(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	doc := func(baseURL, extra string) string {
		return `{"name":"t","description":"d","parameters":{"type":"object","properties":{"id":{"type":"integer"}}},
		"execution":{"method":"GET","base_url":"` + baseURL + `"}` + extra + `}`
	}
	if code, out := e.do("POST", "/v1/plugins", adminToken, doc("https://a.example/{id}", "")); code != http.StatusCreated {
		t.Fatalf("a valid plugin: %d %v", code, out)
	}
	for _, tc := range []struct{ method, path, body, want string }{
		{"POST", "/v1/plugins", doc("https://a.example/{item}", ""), "execution.base_url: the template {item} names no parameter"},
		{"PUT", "/v1/plugins/t", doc("https://a.example/{id}", `,"fixed_params":{"id":"x"}`), "fixed_params.id: must be an integer, not a string"},
		{"PUT", "/v1/plugins/t", doc("https://a.example/{id}", `,"auth_config":{"type":"bearer","token":"A"},"required_credentials":["B"]`), `required_credentials[0]: \"B\" is read by nothing`},
		{"POST", "/v1/plugins", `{"name":"m","description":"d","parameters":{"type":"object"},"execution":{"type":"mcp","mcp_id":"ghost","tool_name":"x"}}`, `execution.mcp_id: no MCP server \"ghost\" is registered`},
	} {
		code, out := e.do(tc.method, tc.path, adminToken, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(errMessage(out), tc.want) {
			t.Errorf("%s %s: %d %s, want 400 with %q", tc.method, tc.path, code, errMessage(out), tc.want)
		}
	}
}

// TestTokenLifetimeChecked (newcomer80): POST /v1/tokens took a negative
// expires_in_seconds, and one past what a time.Duration holds (wrapped
// negative), for no lifetime at all: a token asked to expire never did.
// Each is now 400 naming the field; a lifetime in range still expires.
func TestTokenLifetimeChecked(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	for _, tc := range []struct {
		body, code, want string
	}{
		{`{"user_id": 7, "expires_in_seconds": -60}`, "invalid_payload", "expires_in_seconds: -60: a token's lifetime is 0 (it never expires) or more"},
		{`{"user_id": 7, "expires_in_seconds": 9300000000}`, "invalid_payload", "expires_in_seconds: 9300000000 is over the limit of 9223372036"},
		{`{"name": "no user"}`, "malformed_request", "user_id: required, a positive integer"},
	} {
		code, body := e.do("POST", "/v1/tokens", adminToken, tc.body)
		errObj, _ := body["error"].(map[string]any)
		if code != http.StatusBadRequest || errObj["code"] != tc.code || !strings.Contains(errMessage(body), tc.want) {
			t.Errorf("%s: %d %v; want 400 %s %q", tc.body, code, body, tc.code, tc.want)
		}
	}
	if code, body := e.do("POST", "/v1/tokens", adminToken, `{"user_id": 7, "expires_in_seconds": 3600}`); code != http.StatusCreated {
		t.Fatalf("an hour: %d %v", code, body)
	}
	_, list := e.do("GET", "/v1/tokens", adminToken, nil)
	tokens, _ := list["tokens"].([]any)
	if len(tokens) != 1 {
		t.Fatalf("tokens issued: %v; want the hour's alone", list)
	}
	exp, _ := time.Parse(time.RFC3339, tokens[0].(map[string]any)["expire_time"].(string))
	if d := time.Until(exp); d < 59*time.Minute || d > time.Hour+time.Minute {
		t.Errorf("the hour's token expires in %s", d)
	}
}

// TestExecuteDocExamples (newcomer80): docs/api-routes.md's POST
// /v1/execute section, as a RuoYi developer copies it: its request runs
// against a real upstream (the payload's QCC_KEY, the stored QCC_SECRET,
// fixed_params' page_index sent), its answer has the envelope's fields,
// and its refused call (a user with no stored keys) is the error shown,
// word for word. (docs/runs.md's payload is TestRunsDocPayload's.)
func TestExecuteDocExamples(t *testing.T) {
	page, err := os.ReadFile("../docs/api-routes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(page), "\n## `POST /v1/execute`\n")
	var blocks []map[string]any
	for _, b := range strings.Split(section, "```json\n")[1:] {
		b, _, _ = strings.Cut(b, "```")
		var v map[string]any
		if err := json.Unmarshal([]byte(strings.ReplaceAll(b, "…", "")), &v); err == nil {
			blocks = append(blocks, v)
		}
	}
	if len(blocks) < 3 {
		t.Fatalf("docs/api-routes.md: %d JSON blocks of POST /v1/execute parse; want its request, envelope and error", len(blocks))
	}
	request, envelope, refused := blocks[0], blocks[1], blocks[2]["error"].(map[string]any)

	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"Status":"200","Result":[]}`)
	})
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	if code, body := e.do("POST", "/v1/plugins", adminToken, seedPlugin(t, up.URL)); code != http.StatusCreated {
		t.Fatalf("the seed plugin: %d %v", code, body)
	}
	if code, body := e.do("PUT", "/v1/credentials/7/QCC_SECRET", adminToken, map[string]string{"value": "ts-456-stored"}); code/100 != 2 {
		t.Fatalf("user 7's QCC_SECRET: %d %v", code, body)
	}
	code, got := e.do("POST", "/v1/execute", serviceToken, request)
	if code != http.StatusOK || got["ok"] != true {
		t.Fatalf("the page's request: %d %v", code, got)
	}
	for field := range envelope {
		if _, ok := got[field]; !ok {
			t.Errorf("the page's envelope has %q; the answer %v has not", field, got)
		}
	}
	sent := up.received()
	if len(sent) != 1 || sent[0].header.Get("Token") != "sk-123" || sent[0].header.Get("Timespan") != "ts-456-stored" ||
		!strings.Contains(sent[0].uri, "page_index=2") {
		t.Fatalf("the upstream got %+v; want Token sk-123 (the payload's), Timespan (user 7's stored) and page_index=2", sent)
	}

	request["user_id"], request["credentials"] = 8, nil
	code, got = e.do("POST", "/v1/execute", serviceToken, request)
	errObj, _ := got["error"].(map[string]any)
	if code != http.StatusUnprocessableEntity || errObj["code"] != refused["code"] || errObj["message"] != refused["message"] {
		t.Fatalf("user 8, no keys: %d %v; the page shows 422 %v", code, got, refused)
	}
}
