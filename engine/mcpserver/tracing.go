package mcpserver

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/blindexec/blindexec/tracing"
)

// startCall starts the server span of a tools/call (MCP semantic
// conventions: "tools/call {tool}"), child of the span its HTTP request
// names; tracing off: ctx and its own span, nothing started.
func (s *Service) startCall(ctx context.Context, r *sdk.CallToolRequest) (context.Context, trace.Span) {
	if s.opts.Tracer == nil || r.Extra == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx = tracing.Extract(ctx, r.Extra.Header, true) // written by the API: see Options.Tracer
	return s.opts.Tracer.Start(ctx, "tools/call "+r.Params.Name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), semconv.GenAIToolName(r.Params.Name)))
}
