package engine

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/tracing"
)

// Spans of a call (docs/operations.md, "Tracing", lists them). Nothing in them
// comes from the arguments, the credentials or the answer's body: names,
// codes, counts, the upstream's host and status; every string passes the
// call's masker all the same.
//
// Each function here starts or touches a span only when ctx's span
// records: with tracing off a call allocates nothing more.

// startToolSpan starts the execute_tool span of a call decided from start
// (GenAI semantic conventions).
func startToolSpan(ctx context.Context, call Call, start time.Time) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, trace.SpanFromContext(ctx)
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(call.Plugin.Name),
		semconv.GenAIToolType("function"),
		attribute.String("blindexec.execution.type", call.Plugin.ExecType()),
	}
	if call.ToolCallID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(call.ToolCallID))
	}
	if call.RunID != "" {
		attrs = append(attrs, attribute.String("blindexec.run_id", call.RunID))
	}
	return tracing.Start(ctx, "execute_tool "+call.Plugin.Name, trace.WithAttributes(attrs...), trace.WithTimestamp(start))
}

// endToolSpan notes the call's outcome on its span: the execution id, the
// status and, for a failure, its code and masked message.
func (e *Executor) endToolSpan(span trace.Span, res *Result, prep *Prepared, refused bool) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("blindexec.execution_id", res.ExecutionID), attribute.Int("blindexec.attempts", res.Attempts))
	if res.HTTPStatus != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(res.HTTPStatus))
	}
	if res.Error == nil {
		return
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(res.Error.Code), attribute.Bool("blindexec.refused", refused))
	span.SetStatus(codes.Error, spanMessage(res.Error, e.masker(prep)))
}

// spanMessage is what a span says of a failure: the masked message when
// the engine wrote it without quoting the upstream or the arguments (a
// status, a timeout, a connection failure), else the code alone. An
// invalid argument's message may quote its value, a tool's error is a
// tool result: neither goes into a trace.
func spanMessage(te *ToolError, m *auth.Masker) string {
	switch te.Code {
	case CodeHTTPError, CodeTimeout, CodeTransportError, CodeEgressDenied, CodeResponseTooLarge:
		return m.String(te.Message)
	}
	return te.Code
}

// callMasker is the masker of the call p prepares, built as the executor
// builds it (Executor.masker reads only p): the invoker has no executor.
func callMasker(p *Prepared) *auth.Masker {
	var e *Executor
	return e.masker(p)
}

// startAttempt starts the client span of one HTTP attempt (HTTP semantic
// conventions: method, host, port, the path template of base_url,
// http.request.resend_count from the second attempt on) and sets the
// traceparent header of the span on req, unless the plugin says
// execution.propagate_trace: false. Tracing off, it does nothing; a
// request traced but not sampled carries the traceparent of its parent.
func startAttempt(ctx context.Context, p *Prepared, req *http.Request, attempt int) trace.Span {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		if parent.SpanContext().IsValid() && p.Plugin.Execution.PropagatesTrace() {
			tracing.Inject(ctx, req.Header)
		}
		return parent
	}
	m := callMasker(p)
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(req.Method),
		semconv.ServerAddress(m.String(req.URL.Hostname())),
		semconv.URLScheme(req.URL.Scheme),
	}
	if port, err := strconv.Atoi(req.URL.Port()); err == nil {
		attrs = append(attrs, semconv.ServerPort(port))
	}
	if u, err := url.Parse(p.Plugin.Execution.BaseURL); err == nil && u.Path != "" {
		// The template, not the path sent: path parameters are arguments.
		attrs = append(attrs, semconv.URLTemplate(m.String(u.Path)))
	}
	if attempt > 1 {
		attrs = append(attrs, semconv.HTTPRequestResendCount(attempt-1))
	}
	ctx, span := tracing.Start(ctx, req.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if p.Plugin.Execution.PropagatesTrace() {
		tracing.Inject(ctx, req.Header)
	}
	return span
}

// endAttempt notes what an attempt got: the status (4xx and 5xx are
// errors of a client span) or the failure's code and masked message.
func endAttempt(span trace.Span, p *Prepared, resp *http.Response, err error) {
	if !span.IsRecording() {
		return
	}
	defer span.End()
	if err != nil {
		te := classify(err)
		span.SetAttributes(semconv.ErrorTypeKey.String(te.Code))
		span.SetStatus(codes.Error, spanMessage(te, callMasker(p)))
		return
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(resp.StatusCode)))
		span.SetStatus(codes.Error, "")
	}
}
