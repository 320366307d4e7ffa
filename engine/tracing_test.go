package engine

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/blindexec/blindexec/tracing/tracingtest"
)

func spanAttr(s tracetest.SpanStub, key string) attribute.Value {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// spanText is everything a span exports as text: name, attributes,
// status, events and links.
func spanText(s tracetest.SpanStub) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", s.Name, s.Status.Description, s.SpanContext.TraceState())
	for _, kv := range s.Attributes {
		fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
	}
	for _, e := range s.Events {
		fmt.Fprintf(&b, " event %s", e.Name)
		for _, kv := range e.Attributes {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
		}
	}
	for _, kv := range s.Resource.Attributes() {
		fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
	}
	return b.String()
}

// TestAttemptSpans: each attempt is a client span, the retry's with
// http.request.resend_count, a 503 an error, and each carried its own
// span's traceparent.
func TestAttemptSpans(t *testing.T) {
	var n atomic.Int32
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	})
	h := newHarness(t)
	p := mustPlugin(t, `{"name":"get_item","description":"d","parameters":{"type":"object","properties":{"id":{"type":"string"}}},
		"execution":{"method":"GET","base_url":"%s/items/{id}","retry":{"backoff_ms":1}},"auth_config":{"type":"none"}}`, up.URL)
	ctx, exp := tracingtest.Start(t)
	res, err := h.Execute(ctx, Call{Plugin: p, Arguments: json.RawMessage(`{"id":"secret-item-42"}`), ToolCallID: "call_1"})
	if err != nil || !res.OK || res.Attempts != 2 {
		t.Fatalf("call: %+v %v", res, err)
	}
	var attempts []tracetest.SpanStub
	var tool tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "GET":
			attempts = append(attempts, s)
		case "execute_tool get_item":
			tool = s
		}
	}
	if len(attempts) != 2 || tool.Name == "" {
		t.Fatalf("spans: %v", exp.GetSpans())
	}
	if spanAttr(tool, "gen_ai.tool.call.id").AsString() != "call_1" || spanAttr(tool, "blindexec.attempts").AsInt64() != 2 {
		t.Errorf("execute_tool attributes: %v", tool.Attributes)
	}
	first, second := attempts[0], attempts[1]
	if spanAttr(first, "http.response.status_code").AsInt64() != 503 || first.Status.Code != codes.Error ||
		spanAttr(first, "error.type").AsString() != "503" || spanAttr(first, "http.request.resend_count").Type() != attribute.EMPTY {
		t.Errorf("first attempt: %v %v", first.Attributes, first.Status)
	}
	if spanAttr(second, "http.request.resend_count").AsInt64() != 1 || spanAttr(second, "http.response.status_code").AsInt64() != 200 ||
		second.Status.Code == codes.Error || spanAttr(second, "url.template").AsString() != "/items/{id}" {
		t.Errorf("second attempt: %v %v", second.Attributes, second.Status)
	}
	for i, hit := range up.Hits() {
		s := attempts[i].SpanContext
		if want := "00-" + s.TraceID().String() + "-" + s.SpanID().String() + "-01"; hit.Header.Get("Traceparent") != want {
			t.Errorf("attempt %d carried %q, want its span's %s", i+1, hit.Header.Get("Traceparent"), want)
		}
	}
	for _, s := range exp.GetSpans() {
		if strings.Contains(spanText(s), "secret-item-42") {
			t.Errorf("span %s holds an argument value: %s", s.Name, spanText(s))
		}
	}
}

// TestSpansHoldNoSecret fails calls every way that quotes something (an
// upstream echoing the credential, an argument the schema refuses, a
// credential in the query) and searches every span for the credential,
// the arguments and the answer.
func TestSpansHoldNoSecret(t *testing.T) {
	const key, arg = "sk-span-0123456789abcdef", "personal-value-7"
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"bad key %s for %s","answer":"confidential-answer"}`, r.URL.Query().Get("key"), r.URL.Query().Get("q"))
	})
	h := newHarness(t)
	p := mustPlugin(t, `{"name":"lookup","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string","maxLength":20}},"additionalProperties":false},
		"execution":{"method":"GET","base_url":"%s/search","param_placement":"query"},
		"auth_config":{"type":"api_key","mapping":[{"source":"KEY","target":"key","location":"query"}]}}`, up.URL)
	ctx, exp := tracingtest.Start(t)
	creds := map[string]string{"KEY": key}
	for _, args := range []string{`{"q":"` + arg + `"}`, `{"q":"` + arg + strings.Repeat("x", 30) + `"}`, `{"zz":"` + arg + `"}`} {
		h.Execute(ctx, Call{Plugin: p, Arguments: json.RawMessage(args), Credentials: creds})
	}
	spans := exp.GetSpans()
	if len(spans) < 4 {
		t.Fatalf("%d spans", len(spans))
	}
	for _, s := range spans {
		text := spanText(s)
		for _, secret := range []string{key, arg, "confidential-answer", "key="} {
			if strings.Contains(text, secret) {
				t.Errorf("span %s holds %q: %s", s.Name, secret, text)
			}
		}
	}
}
