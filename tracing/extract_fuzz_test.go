package tracing

import (
	"context"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// FuzzExtract: whatever traceparent and tracestate a caller sends, an
// untrusted caller never decides whether the engine records its request
// (the root sampler does: here, never); a trusted caller's sampled flag
// does; a parent taken is written back as the same traceparent, and its
// tracestate is within W3C's bounds.
func FuzzExtract(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "rojo=00f067aa0ba902b7", true)
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", false)
	f.Add("00-00000000000000000000000000000000-b7ad6b7169203331-01", "a=1", false)
	f.Add("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", true)
	f.Add("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03-extra", "x=1,y=2", false)
	f.Fuzz(func(t *testing.T, traceparent, tracestate string, trusted bool) {
		h := http.Header{TraceparentHeader: {traceparent}, tracestateHeader: {tracestate}}
		ctx := Extract(context.Background(), h, trusted)
		psc := trace.SpanContextFromContext(ctx)
		s := trustSampler{root: sdktrace.NeverSample(), parentBased: true}
		got := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: psc.TraceID(), Name: "call"}).Decision
		want := sdktrace.Drop
		if trusted && psc.IsValid() && psc.IsSampled() {
			want = sdktrace.RecordAndSample
		}
		if got != want {
			t.Fatalf("traceparent %q (trusted %v): sampled %v, want %v", traceparent, trusted, got, want)
		}
		if !psc.IsValid() {
			return
		}
		if back := SpanContextOf(Traceparent(trace.ContextWithSpanContext(context.Background(), psc))); back.TraceID() != psc.TraceID() || back.SpanID() != psc.SpanID() || back.IsSampled() != psc.IsSampled() {
			t.Fatalf("traceparent %q written back reads %v", traceparent, back)
		}
		if ts := psc.TraceState().String(); len(ts) > MaxTraceStateBytes || psc.TraceState().Len() > MaxTraceStateMembers {
			t.Fatalf("tracestate %q kept as %q", tracestate, ts)
		}
	})
}
