package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/tracing"
)

// otlpReceiver is an OTLP/HTTP endpoint: it decodes what the exporter
// sends with the OTLP protobuf types and keeps the spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	raw   [][]byte // each request's decoded body, for the secret search
}

func newReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP request %s %s (%s): want POST /v1/traces, application/x-protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			t.Errorf("OTLP body: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.raw = append(rc.raw, b)
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *otlpReceiver) received() ([]*tracepb.Span, [][]byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...), append([][]byte(nil), rc.raw...)
}

// startTracing configures tracing as serve does, from OTEL_* variables,
// towards rc.
func startTracing(t *testing.T, rc *otlpReceiver, vars map[string]string) *tracing.Tracing {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.URL, "OTEL_SERVICE_NAME": "blindexec-test"}
	for k, v := range vars {
		env[k] = v
	}
	cfg, err := tracing.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil || !cfg.On() {
		t.Fatalf("tracing config: %+v, %v", cfg, err)
	}
	tr, err := tracing.New(context.Background(), cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr
}

// withTracing serves with tr, its log lines through tracing.LogHandler.
func withTracing(tr *tracing.Tracing, logs *bytes.Buffer, mu *sync.Mutex) func(*api.Server) {
	return func(s *api.Server) {
		s.Tracer = tr.Tracer
		log := slog.New(tracing.LogHandler(slog.NewJSONHandler(lockedWriter{logs, mu}, &slog.HandlerOptions{Level: slog.LevelDebug})))
		s.Logger, s.Executor.Logger = log, log
		if s.Runner != nil {
			s.Runner.Logger = log
		}
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// waitSpans flushes until a span named name has arrived.
func waitSpans(t *testing.T, tr *tracing.Tracing, rc *otlpReceiver, name string) []*tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := tr.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		spans, _ := rc.received()
		for _, s := range spans {
			if s.Name == name {
				return spans
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q among %d received", name, len(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func attrString(s *tracepb.Span, key string) string { return attr(s, key).GetStringValue() }
func attrInt(s *tracepb.Span, key string) int64     { return attr(s, key).GetIntValue() }

const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerParent = "00f067aa0ba902b7"
)

// callerState is a tracestate over W3C's bounds: 3 members over 128
// bytes among 38, 700 bytes in all.
var callerState = func() string {
	m := []string{"ruoyi=t61rcWkgMzE"}
	for i := range 35 {
		m = append(m, fmt.Sprintf("k%d=v", i))
		if i == 5 || i == 6 || i == 7 {
			m = append(m, fmt.Sprintf("%s%d=1", strings.Repeat("x", 200), i))
		}
	}
	return strings.Join(m, ",")
}()

// TestTraceOfRun sends one run with RuoYi's traceparent and checks, in
// what an OTLP endpoint received, the tree of the run: the API request
// child of the caller's span, invoke_agent under it, a chat span per
// model call with its model and usage, an execute_tool span per tool call
// with its name and call id, and the upstream attempt as a client span
// whose id is the traceparent the upstream received (without the
// caller's tracestate or baggage). The records and log lines carry the
// trace id.
func TestTraceOfRun(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		rc := newReceiver(t)
		tr := startTracing(t, rc, nil)
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"Status":"200","Result":[{"Name":"北京字节跳动科技有限公司","OperName":"张利东"}]}`)
		})
		llm := openaitest.New(t)
		var logs bytes.Buffer
		var logMu sync.Mutex
		e := newEnv(t, st, withModel(llm), withTracing(tr, &logs, &logMu))
		llm.Script(
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_qcc_1", Name: "search_company_basic", Arguments: `{"keyword":"字节跳动"}`}},
				Usage: openai.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}},
			openaitest.Turn{Content: "北京字节跳动科技有限公司，法人张利东。", Usage: openai.Usage{PromptTokens: 150, CompletionTokens: 10, TotalTokens: 160}},
		)
		code, reply := api.DoJSON(t, e.url, "POST", "/v1/runs", serviceToken, seedPayload(t, up.URL, nil),
			"traceparent", "00-"+callerTrace+"-"+callerParent+"-01",
			"tracestate", callerState,
			"baggage", "userId=7,tenant=acme")
		if code != http.StatusOK || reply["status"] != "completed" {
			t.Fatalf("run: %d %v", code, reply)
		}
		spans := waitSpans(t, tr, rc, "POST /v1/runs")
		byName := map[string][]*tracepb.Span{}
		byID := map[string]*tracepb.Span{}
		for _, s := range spans {
			if got := hex.EncodeToString(s.TraceId); got != callerTrace {
				t.Errorf("span %q is in trace %s, want the caller's %s", s.Name, got, callerTrace)
			}
			byName[s.Name] = append(byName[s.Name], s)
			byID[hex.EncodeToString(s.SpanId)] = s
		}
		one := func(name string) *tracepb.Span {
			t.Helper()
			if len(byName[name]) != 1 {
				t.Fatalf("%d spans %q; spans: %v", len(byName[name]), name, names(spans))
			}
			return byName[name][0]
		}
		parentOf := func(s *tracepb.Span) string { return hex.EncodeToString(s.ParentSpanId) }
		idOf := func(s *tracepb.Span) string { return hex.EncodeToString(s.SpanId) }

		req := one("POST /v1/runs")
		if parentOf(req) != callerParent || req.Kind != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("request span: parent %s kind %v, want the caller's %s, server", parentOf(req), req.Kind, callerParent)
		}
		if attrString(req, "http.route") != "/v1/runs" || attrInt(req, "http.response.status_code") != 200 {
			t.Errorf("request span attributes: %v", req.Attributes)
		}
		if ts := req.TraceState; len(ts) > tracing.MaxTraceStateBytes || strings.Count(ts, ",") >= tracing.MaxTraceStateMembers ||
			!strings.HasPrefix(ts, "ruoyi=t61rcWkgMzE,k0=v,") || strings.Count(ts, strings.Repeat("x", 200)) != 1 || !strings.HasSuffix(ts, ",k27=v") {
			t.Errorf("request span's tracestate %q: want the caller's first 32 members, the first two over 128 bytes dropped", ts)
		}
		agent := one("invoke_agent blindexec")
		if parentOf(agent) != idOf(req) || attrString(agent, "gen_ai.operation.name") != "invoke_agent" ||
			attrString(agent, "gen_ai.request.model") != "qwen-max" || attrInt(agent, "gen_ai.usage.input_tokens") != 250 ||
			attrInt(agent, "gen_ai.usage.output_tokens") != 30 {
			t.Errorf("invoke_agent: parent %s (want %s), %v", parentOf(agent), idOf(req), agent.Attributes)
		}
		chats := byName["chat qwen-max"]
		if len(chats) != 2 {
			t.Fatalf("%d chat spans, want 2 (one per model call): %v", len(chats), names(spans))
		}
		usage := map[int64]int64{}
		for _, c := range chats {
			if parentOf(c) != idOf(agent) || attrString(c, "gen_ai.operation.name") != "chat" || attrString(c, "gen_ai.request.model") != "qwen-max" {
				t.Errorf("chat span: parent %s, %v", parentOf(c), c.Attributes)
			}
			usage[attrInt(c, "gen_ai.usage.input_tokens")] = attrInt(c, "gen_ai.usage.output_tokens")
		}
		if usage[100] != 20 || usage[150] != 10 {
			t.Errorf("chat spans' usage %v, want 100→20 and 150→10", usage)
		}
		tool := one("execute_tool search_company_basic")
		if parentOf(tool) != idOf(agent) || attrString(tool, "gen_ai.operation.name") != "execute_tool" ||
			attrString(tool, "gen_ai.tool.name") != "search_company_basic" || attrString(tool, "gen_ai.tool.call.id") != "call_qcc_1" {
			t.Errorf("execute_tool: parent %s, %v", parentOf(tool), tool.Attributes)
		}
		attempt := one("GET")
		if parentOf(attempt) != idOf(tool) || attempt.Kind != tracepb.Span_SPAN_KIND_CLIENT ||
			attrString(attempt, "http.request.method") != "GET" || attrString(attempt, "server.address") != "127.0.0.1" ||
			attrInt(attempt, "http.response.status_code") != 200 || attrString(attempt, "url.template") != "/ECIV4/Search" {
			t.Errorf("upstream attempt: parent %s kind %v, %v", parentOf(attempt), attempt.Kind, attempt.Attributes)
		}
		if attr(attempt, "http.request.resend_count") != nil {
			t.Errorf("a first attempt has no http.request.resend_count: %v", attempt.Attributes)
		}
		got := up.received()
		if len(got) != 1 {
			t.Fatalf("upstream got %d requests", len(got))
		}
		if tp, want := got[0].header.Get("traceparent"), "00-"+callerTrace+"-"+idOf(attempt)+"-01"; tp != want {
			t.Errorf("upstream's traceparent %q, want %q (its attempt's span)", tp, want)
		}
		for _, h := range []string{"tracestate", "baggage"} {
			if v := got[0].header.Get(h); v != "" {
				t.Errorf("upstream received %s: %q", h, v)
			}
		}
		if writes := byName["INSERT sys_ai_run"]; len(writes) != 2 {
			t.Errorf("%d run record writes traced, want 2 (started, ended)", len(writes))
		}
		for _, w := range byName["INSERT sys_ai_run"] {
			if parentOf(w) != idOf(req) || attrString(w, "db.collection.name") != "sys_ai_run" {
				t.Errorf("run record write: parent %s, %v", parentOf(w), w.Attributes)
			}
		}

		// The records carry the trace id.
		runID := reply["run_id"].(string)
		run, err := st.GetRun(context.Background(), runID)
		if err != nil || run.TraceID != callerTrace {
			t.Errorf("run record's trace id %q (%v), want %s", run.TraceID, err, callerTrace)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.rec.Close(ctx)
		code, list := e.do("GET", "/v1/executions?trace_id="+callerTrace, adminToken, nil)
		if execs, _ := list["executions"].([]any); code != 200 || len(execs) != 1 || execs[0].(map[string]any)["trace_id"] != callerTrace {
			t.Errorf("executions of the trace: %d %v", code, list)
		}
		// The log lines of the request name the trace and their span.
		logMu.Lock()
		lines := logs.String()
		logMu.Unlock()
		var toolLine map[string]any
		for line := range strings.Lines(lines) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "tool call" && m["execution_id"] != nil { // the executor's
				toolLine = m
			}
		}
		if toolLine["trace_id"] != callerTrace || toolLine["span_id"] != idOf(tool) {
			t.Errorf("the tool call's log line: %v, want trace_id %s span_id %s", toolLine, callerTrace, idOf(tool))
		}
		if !strings.Contains(lines, `"msg":"run ended"`) || !strings.Contains(lines, `"trace_id":"`+callerTrace+`"`) {
			t.Errorf("the run's log lines carry no trace id:\n%s", lines)
		}

		// Nothing secret or personal in any span: the credentials, the
		// messages, the arguments, the answer.
		_, raw := rc.received()
		for _, secret := range []string{qccKey, qccSecret, "字节跳动", "张利东", "查一下", "keyword=", up.URL} {
			for _, b := range raw {
				if bytes.Contains(b, []byte(secret)) {
					t.Errorf("an exported span holds %q", secret)
				}
			}
		}
	})
}

func names(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, fmt.Sprintf("%s(%x←%x)", s.Name, s.SpanId, s.ParentSpanId))
	}
	return out
}
