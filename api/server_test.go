package api

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMalformedBodyNamesTheField: a body that does not decode answers 400
// saying which field and what was expected.
func TestMalformedBodyNamesTheField(t *testing.T) {
	tests := []struct{ body, contentType, want string }{
		{`{"user_id":"abc"}`, "", `user_id: expected a user id (a positive integer, or a string of digits), got "abc"`},
		{`{"user_id":-3}`, "", `user_id: expected a user id`},
		{`{"name":5}`, "", `name: expected a string, got number`},
		// In JSON's words, never Go's (map[string]string).
		{`{"credentials":"sk-123"}`, "", `credentials: expected an object, got string`},
		{`{"trace":"yes"}`, "", `trace: expected true or false, got string`},
		// The key is named too (newcomer 76: "credentials: expected a
		// string", whichever of the keys it was).
		{`{"credentials":{"a":1}}`, "", `credentials.a: expected a string, got number`},
		{`{"credentials":{"QCC_KEY":"sk-123","QCC_SECRET":{"v":1}}}`, "", `credentials.QCC_SECRET: expected a string, got object`},
		{`{"user":{"id":7,"permissions":["a",[1]]}}`, "", `user.permissions[1]: expected a string, got array`},
		{`{`, "", `body is not valid JSON at byte 1: unexpected end of JSON input`},
		{`{`, "application/json; charset=utf-8", `body is not valid JSON at byte 1: unexpected end of JSON input`},
		{``, "", `body: empty; expected a JSON object`},
		{" \n", "application/json", `body: empty; expected a JSON object`},
		// A form (a Java client's default, or curl's -d with a form) is named.
		{`name=search_company_basic&user_id=7`, "application/x-www-form-urlencoded",
			`body is not valid JSON at byte 2: invalid character 'a' in literal null (expecting 'u') (sent as application/x-www-form-urlencoded: the body is read as JSON whatever its Content-Type)`},
		{`--x`, "multipart/form-data; boundary=x", `(sent as multipart/form-data: the body`},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		var req ExecuteRequest
		r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
		if tt.contentType != "" {
			r.Header.Set("Content-Type", tt.contentType)
		}
		if decodeBody(w, r, &req) {
			t.Errorf("%s decoded", tt.body)
			continue
		}
		var got map[string]Error
		json.Unmarshal(w.Body.Bytes(), &got)
		if w.Code != 400 || got["error"].Code != "malformed_request" || !strings.Contains(got["error"].Message, tt.want) ||
			(tt.contentType == "" || strings.Contains(tt.contentType, "json")) && strings.Contains(got["error"].Message, "sent as") {
			t.Errorf("%s: %d %s, want a message with %q", tt.body, w.Code, w.Body, tt.want)
		}
	}
	for _, ok := range []string{`{"user_id":7}`, `{"user_id":"7"}`, `{"user_id":null}`} {
		var req ExecuteRequest
		if !decodeBody(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(ok)), &req) || (ok != `{"user_id":null}` && req.UserID != 7) {
			t.Errorf("%s: user_id %d", ok, req.UserID)
		}
	}
}

// Issue 15, point 2: a call refused because it could not be recorded (the
// record spool is full) answers 503, not a client error.
func TestRecordsUnavailableAnswers503(t *testing.T) {
	w := httptest.NewRecorder()
	writeResult(w, &engine.Result{ExecutionID: "e1"}, &engine.RefusedError{ToolError: engine.ToolError{Code: engine.CodeRecordsUnavailable, Message: "spool full"}})
	var got map[string]Error
	json.Unmarshal(w.Body.Bytes(), &got)
	if w.Code != 503 || got["error"].Code != engine.CodeRecordsUnavailable {
		t.Fatalf("%d %s, want 503 records_unavailable", w.Code, w.Body)
	}
}

// An inline plugin's errors are named under the field that held it, its
// root error that field itself (not "plugin."), and a name where the
// document goes says where names go.
func TestParseInlineNamesTheField(t *testing.T) {
	tests := []struct {
		raw, field, names string
		want              []string // field: message
	}{
		{`"search_company_basic"`, "plugin", "name",
			[]string{"plugin: got a string, want a protocol v1 document (an object); a catalog plugin is named by the field name"}},
		{` "search_company_basic"`, "plugins[2]", "plugin_names",
			[]string{"plugins[2]: got a string, want a protocol v1 document (an object); a catalog plugin is named by the field plugin_names"}},
		{`[]`, "plugin", "name", []string{"plugin: got array, want object"}},
		{`{"name":"x","description":"d","parameters":{"type":"object"}}`, "plugin", "name", []string{"plugin: missing property 'execution'"}},
		{`{"name":"x","description":"d","parameters":{"type":"object"},"execution":{"method":"FETCH","base_url":"https://api.example.com"}}`, "plugins[0]", "plugin_names",
			[]string{`plugins[0].execution.method: "FETCH" is not an HTTP method`}},
	}
	for _, tt := range tests {
		p, fields, err := parseInline(json.RawMessage(tt.raw), tt.field, tt.names)
		var got []string
		for _, f := range fields {
			got = append(got, f.Field+": "+f.Message)
		}
		if p != nil || err != nil || strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: %v %v %q, want %q", tt.raw, p, err, got, tt.want)
		}
	}
	p, fields, err := parseInline(json.RawMessage(`{"name":"x","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"https://api.example.com"}}`), "plugin", "name")
	if p == nil || fields != nil || err != nil {
		t.Errorf("a valid document: %v %v %v", p, fields, err)
	}
}

// A known path with the wrong method (a POST where the route is a PUT)
// says which methods the path takes; an unknown path says only that.
func TestNoRouteNamesThePathsMethods(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/v1/credentials/8/QCC_KEY", "no route POST /v1/credentials/8/QCC_KEY (the path takes PUT, DELETE)"},
		{"GET", "/v1/execute", "no route GET /v1/execute (the path takes POST)"},
		{"PUT", "/v1/plugins/x", ""}, // a route: not the catch-all
		{"GET", "/v1/nothing", "no route GET /v1/nothing"},
		{"GET", "/v1/tool", "no route GET /v1/tool"},
	} {
		code, out := e.do(tc.method, tc.path, mcpAdmin, `{}`)
		if tc.want == "" {
			if errCode(out) == "not_found" {
				t.Errorf("%s %s: %d %v, the catch-all", tc.method, tc.path, code, out)
			}
			continue
		}
		if code != 404 || errCode(out) != "not_found" || errMessage(out) != tc.want {
			t.Errorf("%s %s: %d %v, want 404 %q", tc.method, tc.path, code, out, tc.want)
		}
	}
}
