package api

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/pretty"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/jsontext"
)

var envelopeOutputs = []string{
	``, `null`, `"(no content: HTTP 204)"`, `{"company":"ACME","q":"acme"}`, `[1,2.5e3,-0,true,false,null]`,
	`"<a href=\"x\">&amp;</a>"`, `"字节跳动 \u2028 \u2029"`, `{"a":{"b":[{"c":"\\\"\/"}]}}`,
	`{"content_type":"image/png","size":12}`, "\"caf\xc3\xa9\"", `"\ud800"`, `1e999`,
}

// TestAppendEnvelope: the envelope of a successful call is the bytes
// writeJSON writes for the same Result; a Result with an error or a trace
// is left to encoding/json.
func TestAppendEnvelope(t *testing.T) {
	for _, out := range envelopeOutputs {
		var output json.RawMessage // none: nil, as the engine leaves it
		if out != "" {
			output = json.RawMessage(out)
		}
		checkEnvelope(t, &engine.Result{OK: true, HTTPStatus: 200, Output: output,
			ExecutionID: "019abcde-0123-7def-8000-0123456789ab", LatencyMS: 12, Attempts: 1})
	}
	checkEnvelope(t, &engine.Result{HTTPStatus: 404, Output: json.RawMessage(`{"detail":"Not Found"}`), LatencyMS: -1})
	for _, res := range []*engine.Result{
		{Error: &engine.ToolError{Code: "upstream_error", Message: "HTTP 500"}},
		{OK: true, Request: &engine.SentRequest{Method: "GET"}},
		{OK: true, ExecutionID: "a\"b"},
		{OK: true, ExecutionID: "é"},
	} {
		if _, ok := appendEnvelopeHead(nil, res); ok {
			t.Errorf("%+v: took the fast path", res)
		}
	}
}

// FuzzAppendEnvelope: whatever JSON an upstream answers, once the engine
// made it an Output (valid, compact), the fast envelope is writeJSON's.
func FuzzAppendEnvelope(f *testing.F) {
	for _, out := range envelopeOutputs {
		f.Add([]byte(out), 200, int64(3), "019abcde-0123-7def-8000-0123456789ab")
	}
	f.Fuzz(func(t *testing.T, body []byte, status int, latency int64, id string) {
		if !gjson.ValidBytes(body) || len(body) == 0 {
			return
		}
		checkEnvelope(t, &engine.Result{OK: true, HTTPStatus: status, Output: pretty.Ugly(body),
			ExecutionID: id, LatencyMS: latency, Attempts: 1})
	})
}

// checkEnvelope compares what writeResult writes for res with writeJSON's
// bytes, and checks that a plain execution id takes the fast path.
func checkEnvelope(t *testing.T, res *engine.Result) {
	t.Helper()
	if _, ok := appendEnvelopeHead(nil, res); !ok && jsontext.Plain(res.ExecutionID) {
		t.Fatalf("%+v: not taken", res)
	}
	fast := httptest.NewRecorder()
	writeResult(fast, res, nil)
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, res)
	if got, want := fast.Body.String(), rec.Body.String(); got != want {
		t.Errorf("output %q:\n fast %q\n want %q", res.Output, got, want)
	}
	if got, want := fast.Header().Get("Content-Type"), rec.Header().Get("Content-Type"); got != want {
		t.Errorf("Content-Type %q, want %q", got, want)
	}
}
