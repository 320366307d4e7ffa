package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
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

// TestServeExportsTraces runs serve with OTEL_EXPORTER_OTLP_ENDPOINT set:
// a request with the service token's traceparent is exported, in the
// caller's trace, by the time serve has stopped.
func TestServeExportsTraces(t *testing.T) {
	var mu sync.Mutex
	var spans []*tracepb.Span
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	addr := freeAddr(t)
	key := make([]byte, 32)
	rand.Read(key)
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_DB=sqlite:"+filepath.Join(t.TempDir(), "db"),
		"BLINDEXEC_ADDR="+addr, "BLINDEXEC_SPOOL_DIR="+t.TempDir(), "BLINDEXEC_SERVICE_TOKEN=svc",
		"BLINDEXEC_MASTER_KEY="+base64.StdEncoding.EncodeToString(key), "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/plugins", nil)
		req.Header.Set("Authorization", "Bearer svc")
		req.Header.Set("traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("serve never answered /v1/plugins:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, s := range spans {
		found = found || s.Name == "GET /v1/plugins" && hex.EncodeToString(s.TraceId) == trace
	}
	if !found || !strings.Contains(logs.String(), `"msg":"tracing on"`) {
		t.Errorf("exported at exit: %d spans, none GET /v1/plugins in trace %s; log:\n%s", len(spans), trace, logs.String())
	}
}
