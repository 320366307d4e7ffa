package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/tracing/tracingtest"
)

// metaEchoArg makes the test binary an MCP server over stdio whose tool
// "meta" answers the params._meta it received (and whose tool "ask" asks,
// order_test.go).
const metaEchoArg = "mcp-meta-echo"

func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], metaEchoArg) {
		srv := sdk.NewServer(&sdk.Implementation{Name: "meta-echo", Version: "1"}, nil)
		srv.AddTool(&sdk.Tool{Name: "meta", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				b, _ := json.Marshal(req.Params.Meta)
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
			})
		addAsk(srv)
		if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// callSpan is the traceparent the tools/call span of the call has.
func callSpan(t *testing.T, exp *tracetest.InMemoryExporter, tool string) string {
	t.Helper()
	for _, s := range exp.GetSpans() {
		if s.Name == "tools/call "+tool {
			return "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
		}
	}
	t.Fatalf("no span tools/call %s among %v", tool, exp.GetSpans())
	return ""
}

// TestTraceparentToMCP: a tools/call carries the traceparent of its span
// in params._meta, over stdio and over HTTP, where the HTTP request has
// the header too; propagate_trace false, neither.
func TestTraceparentToMCP(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		argv, _ := json.Marshal([]string{os.Args[0], "-test.run=^$", metaEchoArg})
		ex, _ := setup(t, store.MCPServer{ID: "srv-1", Name: "echo", Transport: store.TransportStdio, Command: argv})
		for _, propagate := range []bool{true, false} {
			ctx, exp := tracingtest.Start(t)
			p := &plugins.Plugin{Name: "meta", Description: "x", Parameters: json.RawMessage(`{"type":"object"}`),
				Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: "srv-1", ToolName: "meta", PropagateTrace: &propagate}}
			res, err := ex.Execute(ctx, engine.Call{Plugin: p, Arguments: json.RawMessage(`{}`)})
			if err != nil || !res.OK {
				t.Fatalf("call: %+v %v", res, err)
			}
			want := callSpan(t, exp, "meta")
			if got := strings.Contains(string(res.Output), `\"traceparent\":\"`+want+`\"`); got != propagate {
				t.Errorf("propagate_trace %v: the server's params._meta was %s; want traceparent %s: %v", propagate, res.Output, want, propagate)
			}
		}
	})
	t.Run("http", func(t *testing.T) {
		up := mcptest.New(t)
		ex, _ := setup(t, httpServer(up))
		creds := map[string]string{"mcp_token": "tok-0123456789"}
		ctx, exp := tracingtest.Start(t)
		res, err := ex.Execute(ctx, engine.Call{Plugin: mcpPlugin("echo", nil), Arguments: json.RawMessage(`{"text":"hi"}`), Credentials: creds})
		if err != nil || !res.OK {
			t.Fatalf("call: %+v %v", res, err)
		}
		want := callSpan(t, exp, "echo")
		calls := up.Calls()
		last := calls[len(calls)-1]
		if last.Header.Get("traceparent") != want || last.Meta["traceparent"] != want {
			t.Errorf("server received header %q, _meta %v; want traceparent %s in both", last.Header.Get("traceparent"), last.Meta, want)
		}
		if last.Header.Get("tracestate") != "" || last.Header.Get("baggage") != "" {
			t.Errorf("server received tracestate or baggage: %v", last.Header)
		}
	})
}

// TestMCPSpansHoldNoToolResult: a tool's error text (a tool result, here
// echoing the credential and an argument) stays out of the spans.
func TestMCPSpansHoldNoToolResult(t *testing.T) {
	up := mcptest.New(t)
	ex, _ := setup(t, httpServer(up))
	const token, reason = "tok-0123456789abcdef", "patient-name-zhang"
	ctx, exp := tracingtest.Start(t)
	res, _ := ex.Execute(ctx, engine.Call{Plugin: mcpPlugin("fail", nil), Arguments: json.RawMessage(`{"reason":"` + reason + " " + token + `"}`),
		Credentials: map[string]string{"mcp_token": token}})
	if res.OK || res.Error.Code != "tool_error" {
		t.Fatalf("call: %+v", res)
	}
	spans := exp.GetSpans()
	for _, s := range spans {
		text := fmt.Sprint(s.Name, s.Status, s.Attributes, s.Events)
		for _, secret := range []string{token, reason} {
			if strings.Contains(text, secret) {
				t.Errorf("span %s holds %q: %s", s.Name, secret, text)
			}
		}
		if s.Name == "execute_tool fail" && (s.Status.Description != "tool_error" || s.Status.Code.String() != "Error") {
			t.Errorf("execute_tool status %v, want Error tool_error", s.Status)
		}
	}
}
