package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"text/tabwriter"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/tracing"
)

// benchTracing measures what tracing costs a call: POST /v1/execute and a
// tools/call on /mcp served with tracing off and on (every request
// sampled, its spans exported over OTLP/HTTP by the SDK's batch processor
// to a collector on loopback that reads and drops them), the four
// subjects taking turns in the same rounds, one engine behind both
// servers.
func benchTracing(ctx context.Context, o benchOpts) error {
	up := companyUpstream()
	defer up.Close()
	e, err := newEnv(ctx, nil)
	if err != nil {
		return err
	}
	defer e.close()
	if _, err := e.addCompanyPlugin(ctx, up.URL, gatewayUser, gatewayAPIKey); err != nil {
		return err
	}
	token, _, err := api.IssueToken(ctx, e.st, gatewayUser, "bench-tracing", 0, "")
	if err != nil {
		return err
	}
	if _, err := e.changes.Poll(ctx); err != nil {
		return err
	}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	cfg, err := tracing.Load(func(k string) (string, bool) {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return collector.URL, true
		}
		return "", false
	})
	if err != nil {
		return err
	}
	tr, err := tracing.New(ctx, cfg, "bench")
	if err != nil {
		return err
	}
	defer tr.Shutdown(context.WithoutCancel(ctx))
	serve := func(s *api.Server) *httptest.Server {
		s.Store, s.Creds, s.Executor, s.Changes, s.MCP = e.st, e.creds, e.ex, e.changes, &api.MCPConfig{}
		return httptest.NewServer(s.Handler())
	}
	off, on := serve(&api.Server{}), serve(&api.Server{Tracer: tr.Tracer})
	defer off.Close()
	defer on.Close()

	execBody := `{"name":"` + gatewayTool + `","arguments":{"keyword":"` + gatewayKeyword + `"}}`
	subjects, closeAll, err := dialSubjects(ctx, []namedSpec{
		{"POST /v1/execute, tracing off", gatewaySpec{Kind: "post", URL: off.URL + "/v1/execute", Body: execBody, Token: token}},
		{"POST /v1/execute, tracing on", gatewaySpec{Kind: "post", URL: on.URL + "/v1/execute", Body: execBody, Token: token}},
		{"/mcp tools/call, tracing off", gatewaySpec{Kind: "mcp-http", URL: off.URL + "/mcp", Token: token}},
		{"/mcp tools/call, tracing on", gatewaySpec{Kind: "mcp-http", URL: on.URL + "/mcp", Token: token}},
	})
	if err != nil {
		return err
	}
	defer closeAll()
	f, err := measure(ctx, subjects, o)
	if err != nil {
		return err
	}
	fmt.Printf("== tracing off and on (on: every request sampled, 3 spans a /v1/execute call and 4 a tools/call, exported over OTLP/HTTP to loopback)\n")
	fmt.Printf("   subjects take turns in %d rounds: %d calls each one after another, %s each at concurrency %d\n",
		max(o.rounds, 1), o.n/max(o.rounds, 1)*max(o.rounds, 1), o.dur, o.conc)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "subject\tp50\tp99\tp50 ×off\tcalls/s @%d\tCPU/call\tallocs/call\tkB/call\t\n", o.conc)
	for i, s := range subjects {
		base := f[i-i%2] // the same route with tracing off
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.0f\t%s\t%.0f\t%.1f\t\n", s.name, round(f[i].p50), round(f[i].p99),
			float64(f[i].p50)/float64(base.p50), f[i].rps, round(f[i].cpu), f[i].allocs, f[i].bytes/1024)
	}
	tw.Flush()
	fmt.Println()
	return nil
}

// namedSpec is a subject to dial.
type namedSpec struct {
	name string
	spec gatewaySpec
}

// dialSubjects dials each spec and makes one call through it; closeAll
// closes what was dialed.
func dialSubjects(ctx context.Context, specs []namedSpec) (_ []subject, closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for _, c := range closers {
			c()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	subjects := make([]subject, len(specs))
	for i, s := range specs {
		call, closeFn, err := s.spec.dial(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s.name, err)
		}
		closers = append(closers, closeFn)
		subjects[i] = subject{name: s.name, call: call}
		if err := subjects[i].once(ctx); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return subjects, closeAll, nil
}
