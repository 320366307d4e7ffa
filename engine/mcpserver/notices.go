//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577), but clients and upstreams of 2025 use it, which issue 48 relays

package mcpserver

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
)

// listen returns ctx whose calls' notices — an upstream MCP tool's
// progress and log messages, masked by the executor — go to the client of
// r alone, on r's own stream (issue 48 point 3): progress under the
// client's own progressToken (and only when it gave one), log messages as
// notifications/message at the level the client set.
func listen(ctx context.Context, r *sdk.CallToolRequest) context.Context {
	tok := r.Params.GetProgressToken()
	client := r.Session
	return engine.WithListener(ctx, func(n engine.Notice) {
		if n.Log {
			client.Log(ctx, &sdk.LoggingMessageParams{Level: sdk.LoggingLevel(n.Level), Logger: n.Logger, Data: n.Data})
			return
		}
		client.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: n.Progress, Total: n.Total, Message: n.Message})
	}, tok != nil)
}
