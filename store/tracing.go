package store

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/blindexec/blindexec/tracing"
)

// writeSpan starts the client span of a record write on the request path
// (database semantic conventions: "INSERT table"); tracing off, nothing.
func (s *Store) writeSpan(ctx context.Context, table string) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, trace.SpanFromContext(ctx)
	}
	system := semconv.DBSystemNameMySQL
	if s.dialect == DialectSQLite {
		system = semconv.DBSystemNameSQLite
	}
	return tracing.Start(ctx, "INSERT "+table, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		system, semconv.DBOperationName("INSERT"), semconv.DBCollectionName(table)))
}

// failSpan notes a failed write: the error's class only (a database error
// may quote the values).
func failSpan(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	class := "db_error"
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		class = "canceled"
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(class))
	span.SetStatus(codes.Error, class)
}
