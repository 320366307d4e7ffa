//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577), but upstreams of 2025 send logs: these servers do

package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/logbuf"
	"github.com/blindexec/blindexec/tracing/tracingtest"
)

// Review 69: an MCP server's log messages that no call in flight can be
// given (sent between calls, on the session's standalone stream) were one
// engine log line each: a server sending thousands filled the engine's
// log. Now they are a few lines a minute, the next saying how many were
// held back.
func TestUnattributedLogsBounded(t *testing.T) {
	const flood = 3000
	sent := make(chan struct{})
	log := loggedCall(t, func(ctx context.Context, req *sdk.CallToolRequest) {
		go func() { // after the call: no call to give them to
			defer close(sent)
			time.Sleep(200 * time.Millisecond)
			for i := range flood {
				req.Session.Log(context.Background(), &sdk.LoggingMessageParams{Level: "info", Data: i})
			}
		}()
	})
	<-sent
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(log.String(), "not attributable") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the rest of the flood arriving
	if n := strings.Count(log.String(), "not attributable"); n == 0 || n > 10 {
		t.Fatalf("%d log lines for %d unattributable messages, want 1 to 10", n, flood)
	}
}

// Review 69: a call's upstream logging thousands of messages while it
// runs made one engine log line each (the client hears them all, within
// its stream's bound): now a call logs its first messages and then how
// many more came.
func TestCallLogsBounded(t *testing.T) {
	const flood = 3000
	log := loggedCall(t, func(ctx context.Context, req *sdk.CallToolRequest) {
		for i := range flood {
			req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: i})
		}
	})
	time.Sleep(300 * time.Millisecond) // notices the SDK still queues
	lines := strings.Count(log.String(), `msg="upstream MCP log message"`)
	if lines == 0 || lines > 50 {
		t.Fatalf("%d log lines for a call's %d log messages, want 1 to 50", lines, flood)
	}
}

// TestCallLogsBoundedInSize (mcp78): the lines were few, but each held
// the upstream's log message whole — its data and logger name, up to an
// upstream answer's 10 MiB — in the engine's log and as an event of the
// call's span, which keeps 128 events: 20 lines and 128 events of 512 KiB
// were 74 MiB of log and span from one call. Now each keeps at most
// engine.MaxNoticeLogBytes of each text, saying how much more there was;
// the call's client still hears the message whole.
func TestCallLogsBoundedInSize(t *testing.T) {
	big := strings.Repeat("d", 512<<10)
	ctx, exp := tracingtest.Start(t)
	log := loggedCallContext(t, ctx, func(ctx context.Context, req *sdk.CallToolRequest) {
		for range 40 {
			req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Logger: big[:64<<10], Data: big})
		}
	})
	time.Sleep(300 * time.Millisecond) // notices the SDK still queues
	if n := len(log.String()); n == 0 || n > 256<<10 {
		t.Errorf("the engine's log holds %d bytes for a call's 40 log messages of 512 KiB, want at most 256 KiB", n)
	}
	if !strings.Contains(log.String(), "more bytes]") {
		t.Errorf("the log does not say a message was cut: %.300s", log.String())
	}
	events := 0
	for _, s := range exp.GetSpans() {
		for _, e := range s.Events {
			for _, a := range e.Attributes {
				events += len(a.Value.Emit())
			}
		}
	}
	if events == 0 || events > 256<<10 {
		t.Errorf("the spans' events hold %d bytes, want at most 256 KiB", events)
	}
}

// loggedCall calls once, through the manager over HTTP, an upstream tool
// "echo" that runs logs and answers "ok": the manager's log.
func loggedCall(t *testing.T, logs func(ctx context.Context, req *sdk.CallToolRequest)) *logbuf.Buffer {
	t.Helper()
	return loggedCallContext(t, context.Background(), logs)
}

// loggedCallContext is loggedCall within ctx.
func loggedCallContext(t *testing.T, ctx context.Context, logs func(ctx context.Context, req *sdk.CallToolRequest)) *logbuf.Buffer {
	t.Helper()
	up := mcptest.New(t)
	up.MCP.AddTool(&sdk.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			logs(ctx, req)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	ex, m := setup(t, httpServer(up))
	log := new(logbuf.Buffer)
	m.Logger = slog.New(slog.NewTextHandler(log, nil))
	res, err := ex.Execute(ctx, engine.Call{Plugin: mcpPlugin("echo", nil), Arguments: json.RawMessage(`{}`), Credentials: tokenA})
	if err != nil || !res.OK {
		t.Fatalf("%+v %v", res, err)
	}
	return log
}
