//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577), but clients and upstreams of 2025 use it, which issue 48 relays

package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPProgressLogsAndCancellation: a client's progressToken reaches the
// upstream (as a token of the call's own), and the upstream's progress and
// log messages come back to that client alone, masked; a second client
// calling at the same time sees none of them; the client's cancellation
// cancels the upstream call (issue 48 point 3).
func TestMCPProgressLogsAndCancellation(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	var upstreamToken any
	cancelled := make(chan struct{})
	e.up.MCP.AddTool(&sdk.Tool{Name: "chatty", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if upstreamToken == nil {
				upstreamToken = req.Params.GetProgressToken()
			}
			for i := 1; i <= 2; i++ {
				req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 2, Message: "step with " + medSecret})
			}
			req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "warning", Logger: "chatty", Data: map[string]any{"note": "key " + medSecret}})
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
		})
	e.up.MCP.AddTool(&sdk.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	e.register()
	if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != 200 {
		t.Fatalf("import: %d %v", code, out)
	}
	if _, err := e.st.SetPluginsConsequential(t.Context(), []string{"chatty", "hang"}, new("0"), "admin"); err != nil {
		t.Fatal(err)
	}
	type heard struct {
		sync.Mutex
		progress []*sdk.ProgressNotificationParams
		logs     []*sdk.LoggingMessageParams
	}
	connect := func(h *heard) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
				h.Lock()
				h.progress = append(h.progress, r.Params)
				h.Unlock()
			},
			LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
				h.Lock()
				h.logs = append(h.logs, r.Params)
				h.Unlock()
			},
		}).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: Bearer(e.userTok)}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if err := cs.SetLoggingLevel(t.Context(), &sdk.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	var mine, other heard
	cs, bystander := connect(&mine), connect(&other)
	params := &sdk.CallToolParams{Name: "chatty", Arguments: map[string]any{}}
	params.SetProgressToken("mine-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("chatty: %+v, %v", res, err)
	}
	if _, err := bystander.CallTool(t.Context(), &sdk.CallToolParams{Name: "chatty", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if tok, _ := upstreamToken.(string); tok == "" || tok == "mine-1" {
		t.Errorf("the upstream's progressToken: %v, want one of the call's own", upstreamToken)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mine.Lock()
		n, l := len(mine.progress), len(mine.logs)
		mine.Unlock()
		if n >= 2 && l >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mine.Lock()
	got, _ := json.Marshal(map[string]any{"progress": mine.progress, "logs": mine.logs})
	mine.Unlock()
	if len(mine.progress) != 2 || mine.progress[1].ProgressToken != "mine-1" || mine.progress[1].Progress != 2 || mine.progress[1].Total != 2 ||
		len(mine.logs) != 1 || mine.logs[0].Level != "warning" || !strings.Contains(string(got), "step with ") || !strings.Contains(string(got), `"key `) || strings.Contains(string(got), medSecret) {
		t.Errorf("the caller heard %s; want 2 progress notices under its token and the warning, masked", got)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "upstream MCP log message") || strings.Contains(logs, medSecret) {
		t.Errorf("the engine's log: want the upstream's message, masked")
	}
	other.Lock()
	if len(other.progress) != 0 {
		t.Errorf("a client that asked for no progress heard %d notices", len(other.progress))
	}
	other.Unlock()

	// Cancellation: the client gives up, the upstream's call is cancelled.
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "hang", Arguments: map[string]any{}}); err == nil {
		t.Error("hang answered")
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Error("the upstream call was not cancelled")
	}
}
