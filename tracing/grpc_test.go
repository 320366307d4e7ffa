package tracing

import (
	"context"
	"net"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// collector is an OTLP/gRPC trace receiver on loopback.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestExportGRPC: OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends to the endpoint
// over OTLP/gRPC (the http/protobuf export is api's TestTraceOfRun).
func TestExportGRPC(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	c := &collector{}
	coltracepb.RegisterTraceServiceServer(srv, c)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	cfg, err := Load(lookup(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + l.Addr().String(), "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Tracer.Start(context.Background(), "over grpc")
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.names) != 1 || c.names[0] != "over grpc" {
		t.Errorf("the collector received %v", c.names)
	}
}
