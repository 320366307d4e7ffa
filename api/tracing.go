package api

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/tracing"
)

// serveTraced serves an authenticated request inside its server span: the
// parent is the request's traceparent, whose sampled flag counts only
// from the service and administrator tokens (tracing.Extract). The span
// holds the route, never the path's values or the query.
func (s *Server) serveTraced(w http.ResponseWriter, r *http.Request, p principal, h http.HandlerFunc) {
	ctx := tracing.Extract(r.Context(), r.Header, p.role >= roleService)
	route := r.Pattern
	if _, path, ok := strings.Cut(route, " "); ok {
		route = path // "POST /v1/execute": the method is its own attribute
	}
	ctx, span := s.Tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.HTTPRoute(route),
			attribute.String("blindexec.principal.role", p.role.String())))
	defer span.End()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	h(sw, r.WithContext(ctx))
	span.SetAttributes(semconv.HTTPResponseStatusCode(sw.status))
	if sw.status >= 500 {
		span.SetStatus(codes.Error, "")
		span.SetAttributes(semconv.ErrorTypeKey.String(http.StatusText(sw.status)))
	}
}

// statusWriter notes the status a handler answers with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the writer's Flush and
// deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// traceWait records a paused run's wait for a person as a span of the
// request that resumes it, from the pause to the last decision, linked to
// the request that paused the run: the wait outlives that request, and
// perhaps its replica, so it is a link between two traces rather than
// one span held open. Outcomes are the items' (approved, denied, expired,
// stale); nothing of the requests waiting.
func traceWait(ctx context.Context, st *pausedState, items []store.PendingItem) {
	if !trace.SpanFromContext(ctx).IsRecording() || st.PausedAt.IsZero() {
		return
	}
	end := st.PausedAt
	outcomes := make([]string, 0, len(items))
	for _, it := range items {
		if it.DecidedTime != nil && it.DecidedTime.After(end) {
			end = *it.DecidedTime
		}
		outcomes = append(outcomes, it.Status)
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(st.PausedAt), trace.WithAttributes(
		attribute.Int("blindexec.pending.count", len(items)), attribute.StringSlice("blindexec.pending.outcomes", outcomes))}
	if sc := tracing.SpanContextOf(st.WaitFrom); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	_, span := tracing.Start(ctx, "await_confirmation", opts...)
	span.End(trace.WithTimestamp(end))
}
