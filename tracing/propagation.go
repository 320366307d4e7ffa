package tracing

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// W3C Trace Context's bounds on tracestate.
const (
	MaxTraceStateMembers = 32
	MaxTraceStateBytes   = 512
	// A member longer than this is dropped first when the whole is too
	// long.
	maxTraceStateMemberBytes = 128
)

// Header names of W3C Trace Context.
const (
	TraceparentHeader = "Traceparent"
	tracestateHeader  = "Tracestate"
)

type untrustedKey struct{}

// Extract returns ctx with the remote parent the request's traceparent
// names, if any. trusted (the service and administrator tokens): its
// sampled flag decides, as the parentbased_* samplers say. Other callers
// keep the trace id and parent span of theirs, but sampling is decided
// here (the root sampler), so that a caller cannot make the engine record
// and export every request it sends. tracestate is kept within W3C's
// bounds (BoundTraceState).
func Extract(ctx context.Context, h http.Header, trusted bool) context.Context {
	tp := h.Values(TraceparentHeader)
	if len(tp) == 0 {
		return ctx
	}
	carrier := propagation.HeaderCarrier{TraceparentHeader: tp[:1]}
	if ts := strings.Join(h.Values(tracestateHeader), ","); ts != "" {
		carrier[tracestateHeader] = []string{BoundTraceState(ts)}
	}
	ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	if !trusted {
		ctx = context.WithValue(ctx, untrustedKey{}, true)
	}
	return ctx
}

// BoundTraceState keeps a tracestate header within W3C's bounds: at most
// 32 list members (the first ones), and, when the whole is longer than
// 512 bytes, members longer than 128 bytes dropped first, then members
// from the end.
func BoundTraceState(s string) string {
	var members []string
	for m := range strings.SplitSeq(s, ",") {
		if m = strings.Trim(m, " \t"); m != "" {
			members = append(members, m)
		}
	}
	members = members[:min(len(members), MaxTraceStateMembers)]
	size := func() int {
		n := max(len(members)-1, 0) // the commas
		for _, m := range members {
			n += len(m)
		}
		return n
	}
	for size() > MaxTraceStateBytes {
		i := len(members) - 1
		for j, m := range members {
			if len(m) > maxTraceStateMemberBytes {
				i = j
				break
			}
		}
		members = append(members[:i], members[i+1:]...)
	}
	return strings.Join(members, ",")
}

// trustSampler is the engine's sampler: a parent of this process, or a
// trusted remote one, decides as parentbased_* says (when ParentBased);
// an untrusted remote parent does not, the root sampler does.
type trustSampler struct {
	root        sdktrace.Sampler
	parentBased bool
}

func (s trustSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	psc := trace.SpanContextFromContext(p.ParentContext)
	if !s.parentBased || !psc.IsValid() || psc.IsRemote() && p.ParentContext.Value(untrustedKey{}) != nil {
		r := s.root.ShouldSample(p)
		r.Tracestate = psc.TraceState()
		return r
	}
	if psc.IsSampled() {
		return sdktrace.AlwaysSample().ShouldSample(p)
	}
	return sdktrace.NeverSample().ShouldSample(p)
}

func (s trustSampler) Description() string {
	return "blindexec{root=" + s.root.Description() + ",trusted parents decide}"
}

// Traceparent is the traceparent header of ctx's span, "" when it has
// none (tracing off).
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	var b [55]byte // 00-<32 hex>-<16 hex>-<2 hex>
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b[:])
}

// Inject sets the traceparent header of ctx's span on h, and only it:
// tracestate and baggage are the caller's and the engine's business, not
// the upstream's. Without a span (tracing off) it does nothing.
func Inject(ctx context.Context, h http.Header) {
	if tp := Traceparent(ctx); tp != "" {
		h[TraceparentHeader] = []string{tp}
	}
}

// SpanContextOf reads a traceparent value (as Traceparent writes it):
// the span a later span links to. Text that is not one gives an invalid
// span context.
func SpanContextOf(traceparent string) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}
