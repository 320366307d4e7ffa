package main

import (
	"testing"
)

// TestLoadTracing: serve's tracing is off without an endpoint, and a bad
// OTEL_* value is a bad setting like any other (exit 2, naming it).
func TestLoadTracing(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		wantErr string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}, wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "x"}, wantErr: "OTEL_TRACES_SAMPLER_ARG"},
	} {
		got, err := fromEnv(c.env, loadTracing)
		if expectErr(t, c.env, err, c.wantErr) {
			continue
		}
		if err != nil || got.On() != c.on {
			t.Errorf("%v: on %v, %v; want on %v", c.env, got.On(), err, c.on)
		}
	}
}
