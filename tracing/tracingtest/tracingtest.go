// Package tracingtest keeps a test's spans in memory, exported as the
// engine's tracer provider exports them (synchronously here).
package tracingtest

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/blindexec/blindexec/tracing"
)

// Start returns a context in a sampled trace, whose root span "test" ends
// with t, and the exporter that holds every span ended under it.
func Start(t testing.TB) (context.Context, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.NewWithProcessor(tracing.Config{}, "test", sdktrace.NewSimpleSpanProcessor(exp))
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	ctx, span := tr.Tracer.Start(context.Background(), "test")
	t.Cleanup(func() { span.End() })
	return ctx, exp
}
