package api

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

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
