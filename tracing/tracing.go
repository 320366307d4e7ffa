// Package tracing exports OpenTelemetry traces over OTLP, configured by
// the standard OTEL_* variables, and carries a trace in and out of the
// engine: the W3C traceparent of an incoming request becomes the parent
// (its sampled flag trusted only from the operator's tokens), and
// upstream requests carry traceparent onward, never tracestate or
// baggage.
//
// Tracing is off unless an endpoint is set (unlike the SDK, which then
// exports to localhost): off, nothing in this package allocates, and the
// engine's spans are not started (Start hands back the context's own
// non-recording span).
//
// Span names and attributes follow the OpenTelemetry semantic conventions
// v1.37.0 (package semconv below), GenAI included: those are still in
// development, so the version is pinned here and in docs/operations.md.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/blindexec/blindexec/internal/redact"
)

// Scope is the instrumentation scope of every span the engine makes.
const Scope = "github.com/blindexec/blindexec"

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config is the tracing configuration; the zero Config is off.
type Config struct {
	// Endpoint is where spans go: for http/protobuf the full URL of the
	// traces path, for grpc the collector's URL.
	Endpoint    string
	Protocol    string // ProtocolHTTP or ProtocolGRPC
	ServiceName string // "blindexec" when empty
	// Sampler is the root sampler: for a request without a trusted
	// parent, whether it is sampled.
	Sampler sdktrace.Sampler
	// ParentBased follows a trusted parent's sampled flag (the
	// parentbased_* samplers, the default).
	ParentBased bool
}

// Host is the collector's host and port, for logs: the endpoint may hold
// credentials (userinfo, a query).
func (c Config) Host() string {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}

// On reports whether c exports anything.
func (c Config) On() bool { return c.Endpoint != "" }

// ConfigError names the variable whose value is wrong.
type ConfigError struct {
	Name, Value, Want string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s=%q: want %s", e.Name, shown(e.Value), e.Want)
}

// shown is a value as a message quotes it: an endpoint's userinfo (any
// scheme) and its credentials' parameters written "…" (leftovers80).
func shown(v string) string { return redact.URL(redact.Location(v)) }

// Load reads the OTEL_* variables through lookup (the process
// environment, then blindexec.env: settings.OTELVariables lists them). The
// SDK's others (OTEL_EXPORTER_OTLP_HEADERS, _CERTIFICATE, _TIMEOUT,
// OTEL_RESOURCE_ATTRIBUTES...) it reads itself, from the process
// environment. No endpoint, or OTEL_SDK_DISABLED=true: the zero Config,
// off. A bad value is a *ConfigError (several are joined).
func Load(lookup func(string) (string, bool)) (Config, error) {
	get := func(name string) string {
		if v, ok := lookup(name); ok {
			return strings.TrimSpace(v)
		}
		return ""
	}
	var errs []error
	if v := get("OTEL_SDK_DISABLED"); v != "" {
		disabled, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, &ConfigError{"OTEL_SDK_DISABLED", v, "true or false"})
		} else if disabled {
			return Config{}, errors.Join(errs...)
		}
	}
	c := Config{ServiceName: get("OTEL_SERVICE_NAME"), Protocol: ProtocolHTTP, ParentBased: true}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := get(name); v != "" {
			if v != ProtocolHTTP && v != ProtocolGRPC {
				errs = append(errs, &ConfigError{name, v, ProtocolHTTP + " or " + ProtocolGRPC + " (http/json is not supported)"})
			}
			c.Protocol = v
			break
		}
	}
	endpoint, signal := get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), true
	name := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	if endpoint == "" {
		endpoint, signal, name = get("OTEL_EXPORTER_OTLP_ENDPOINT"), false, "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	if endpoint != "" {
		// One net/url refuses the SDK would log whole, as it is.
		if _, err := url.Parse(endpoint); err != nil || !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
			errs = append(errs, &ConfigError{name, endpoint, "an http:// or https:// URL (a / ? # or @ in a user or password percent-encoded)"})
		}
		c.Endpoint = endpoint
		if c.Protocol == ProtocolHTTP && !signal {
			// The base endpoint names the collector; traces go to its
			// /v1/traces, as the specification says.
			c.Endpoint = strings.TrimSuffix(endpoint, "/") + "/v1/traces"
		}
	}
	var err error
	c.Sampler, c.ParentBased, err = sampler(get("OTEL_TRACES_SAMPLER"), get("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return c, nil
}

// sampler parses OTEL_TRACES_SAMPLER and its argument into the root
// sampler and whether a trusted parent's flag is followed.
func sampler(name, arg string) (sdktrace.Sampler, bool, error) {
	ratio := func() (sdktrace.Sampler, error) {
		if arg == "" {
			return sdktrace.AlwaysSample(), nil // the specification's default ratio: 1.0
		}
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || f < 0 || f > 1 {
			return nil, &ConfigError{"OTEL_TRACES_SAMPLER_ARG", arg, "a ratio between 0 and 1"}
		}
		return sdktrace.TraceIDRatioBased(f), nil
	}
	base, parent := strings.CutPrefix(name, "parentbased_")
	if name == "" {
		base, parent = "always_on", true
	}
	switch base {
	case "always_on":
		return sdktrace.AlwaysSample(), parent, nil
	case "always_off":
		return sdktrace.NeverSample(), parent, nil
	case "traceidratio":
		s, err := ratio()
		return s, parent, err
	}
	return nil, false, &ConfigError{"OTEL_TRACES_SAMPLER", name,
		"always_on, always_off, traceidratio or their parentbased_ forms (parentbased_always_on by default)"}
}

// Tracing is a running exporter: Tracer starts the engine's root spans.
type Tracing struct {
	Tracer   trace.Tracer
	provider *sdktrace.TracerProvider
}

// New builds the exporter and the tracer provider of c; version is the
// engine's, set as service.version. c off: nil, which is valid (Shutdown
// does nothing).
func New(ctx context.Context, c Config, version string) (*Tracing, error) {
	if !c.On() {
		return nil, nil
	}
	var exp sdktrace.SpanExporter
	var err error
	switch c.Protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(c.Endpoint))
	default:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(c.Endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter to %s: %w", shown(c.Endpoint), err)
	}
	return NewWithProcessor(c, version, sdktrace.NewBatchSpanProcessor(exp)), nil
}

// NewWithProcessor is New with the span processor given (tests use a
// synchronous one).
func NewWithProcessor(c Config, version string, sp sdktrace.SpanProcessor) *Tracing {
	name := c.ServiceName
	if name == "" {
		name = "blindexec"
	}
	// OTEL_RESOURCE_ATTRIBUTES are merged by resource.Environment.
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName(name), semconv.ServiceVersion(version)), resource.Environment())
	if err != nil {
		res = resource.NewSchemaless(semconv.ServiceName(name), semconv.ServiceVersion(version))
	}
	root := c.Sampler
	if root == nil {
		root = sdktrace.AlwaysSample()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithResource(res),
		sdktrace.WithSampler(trustSampler{root: root, parentBased: c.ParentBased}))
	return &Tracing{Tracer: tp.Tracer(Scope, trace.WithInstrumentationVersion(version)), provider: tp}
}

// ForceFlush exports the spans ended so far.
func (t *Tracing) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Shutdown exports what is left and stops.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Start starts a child span of ctx's span with that span's tracer. When
// ctx's span does not record (tracing off, a request not sampled), it
// starts nothing and returns ctx and that span: setting attributes on it
// or ending it does nothing, and nothing is allocated.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, opts...)
}
