package mcp

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/tracing"
)

// startCall starts the client span of a tools/call to an MCP server (MCP
// semantic conventions: "tools/call {tool}"); tracing off, nothing.
func startCall(ctx context.Context, e *plugins.Execution) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tracing.Start(ctx, "tools/call "+e.ToolName, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), semconv.GenAIToolName(e.ToolName),
			attribute.String("blindexec.mcp.server", e.MCPID)))
}

// endCall notes a failed call's code on its span: only the code, the
// message (which may quote the server) is the execute_tool span's,
// masked.
func endCall(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	code := engine.CodeTransportError
	var te *engine.ToolError
	var refused *engine.RefusedError
	switch {
	case errors.As(err, &refused):
		code = refused.Code
	case errors.As(err, &te):
		code = te.Code
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(code))
	span.SetStatus(codes.Error, code)
}
