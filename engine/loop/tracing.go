package loop

import (
	"cmp"
	"context"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/tracing"
)

// Spans of a run, after the GenAI semantic conventions v1.37.0: the run is
// invoke_agent, each model call chat, each tool call execute_tool (the
// executor's; search_tools's here). No message, completion, argument or
// query goes into them: models, counts, ids and codes.

// agentName is the gen_ai.agent.name of a run.
const agentName = "blindexec"

// startRun starts a run's invoke_agent span; tracing off, nothing.
func (s *state) startRun(ctx context.Context) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx, span := tracing.Start(ctx, "invoke_agent "+agentName, trace.WithAttributes(
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(agentName),
		semconv.GenAIProviderNameOpenAI,
		semconv.GenAIRequestModel(cmp.Or(s.req.Model, s.r.DefaultModel)),
		attribute.String("blindexec.run_id", s.reply.RunID),
	))
	// The run logs without a context: its lines name the trace here.
	sc := span.SpanContext()
	s.log = s.log.With("trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
	return ctx, span
}

// endRun notes the run's outcome: its status, steps, summed usage and, for
// a failure, the code (the message may quote the model's endpoint).
func endRun(span trace.Span, reply *Reply) {
	if !span.IsRecording() {
		return
	}
	defer span.End()
	span.SetAttributes(
		attribute.String("blindexec.run.status", reply.Status),
		attribute.Int("blindexec.run.steps", len(reply.Steps)),
		semconv.GenAIUsageInputTokens(reply.Usage.PromptTokens),
		semconv.GenAIUsageOutputTokens(reply.Usage.CompletionTokens),
	)
	if reply.Error != nil && reply.Status != StatusMaxSteps {
		span.SetAttributes(semconv.ErrorTypeKey.String(reply.Error.Code))
		span.SetStatus(codes.Error, reply.Error.Code)
	}
}

// startChat starts the chat span of one model call.
func startChat(ctx context.Context, creq *openai.ChatCompletionRequest, turn int) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tracing.Start(ctx, "chat "+creq.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameOpenAI,
		semconv.GenAIRequestModel(creq.Model),
		attribute.Int("blindexec.turn", turn),
		attribute.Bool("blindexec.stream", creq.StreamOptions != nil),
	))
}

// endChat notes a model call's usage (what the reply's usage grew by) or
// its failure's code.
func (s *state) endChat(ctx context.Context, span trace.Span, before openai.Usage, err error) {
	if !span.IsRecording() {
		return
	}
	defer span.End()
	u := s.reply.Usage
	span.SetAttributes(
		semconv.GenAIUsageInputTokens(u.PromptTokens-before.PromptTokens),
		semconv.GenAIUsageOutputTokens(u.CompletionTokens-before.CompletionTokens),
	)
	if err != nil {
		_, re := s.failure(ctx, err)
		span.SetAttributes(semconv.ErrorTypeKey.String(re.Code))
		span.SetStatus(codes.Error, re.Code)
	}
}

// searchSpan runs a search_tools call in its execute_tool span: the
// number of tools found, never the query.
func (s *state) searchSpan(ctx context.Context, st Step, search func() outcome) outcome {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return search()
	}
	_, span := tracing.Start(ctx, "execute_tool "+plugins.SearchToolsName, trace.WithAttributes(
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(plugins.SearchToolsName),
		semconv.GenAIToolCallID(st.ToolCallID),
	))
	defer span.End()
	out := search()
	span.SetAttributes(attribute.Int("blindexec.tools_found", len(out.step.Found)))
	if out.step.Status != StepOK {
		span.SetAttributes(semconv.ErrorTypeKey.String(out.step.Status))
		span.SetStatus(codes.Error, out.step.Status)
	}
	return out
}
