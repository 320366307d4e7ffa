package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/tracing"
)

// Error codes the Invoker adds to the executor's.
const (
	// CodeToolError: the tool ran and reported a failure (isError).
	CodeToolError = "tool_error"
	// CodeMCPError: the MCP server answered tools/call with a JSON-RPC
	// error (an unknown tool, arguments it rejects).
	CodeMCPError = "mcp_error"
)

// Result is the MCP result as the engine passes it on: the tool output of
// an executed call (so execution.response shaping applies to it) and the
// body of the proxy call. isError is always present.
type Result struct {
	Content           []sdk.Content `json:"content"`
	IsError           bool          `json:"isError"`
	StructuredContent any           `json:"structuredContent,omitempty"`
}

// ResultOf converts what the SDK returned.
func ResultOf(r *sdk.CallToolResult) Result {
	content := r.Content
	if content == nil {
		content = []sdk.Content{}
	}
	return Result{Content: content, IsError: r.IsError, StructuredContent: r.StructuredContent}
}

// Text joins the result's text content, for error messages.
func (r Result) Text() string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// codeRejected is the SDK's jsonrpc2.ErrRejected: the client's own
// transport failed to deliver the request; the server said nothing.
const codeRejected = -32005

// Invoker performs execution.type "mcp": tools/call of execution.tool_name
// on the server execution.mcp_id, with the prepared (flat, fixed params
// merged) arguments, the plugin's execution.headers on its HTTP requests,
// and the server's auth config filled from the call's credentials.
//
// The body of the engine.Response is the Result as JSON with status 200.
// A result with isError is a tool failure: the call is not ok, its code is
// CodeToolError, its message the result's text and its details the result
// itself (an excerpt of the body, masked). Unlike the proxy call, which
// passes isError through with 200 as seed 004 FR-004 says, the executor's
// envelope reports it in ok so that the LLM loop and /v1/execute callers
// need not look inside outputs.
//
// A plugin must list the credential keys of its server's auth config in
// required_credentials (the importer does): the executor resolves only the
// keys a plugin declares, and a missing one refuses the call.
type Invoker struct{ Manager *Manager }

// Server implements engine.ServerReaders: the row CallTool reads
// (Manager.config) — its auth config, where its tools send its keys,
// its digest and whether its users' stored credentials may go there
// (Manager.HostMoved) — in one read.
func (inv Invoker) Server(ctx context.Context, p *plugins.Plugin) (engine.Server, error) {
	c, err := inv.Manager.config(ctx, p.Execution.MCPID)
	if err != nil {
		return engine.Server{}, err
	}
	return engine.Server{Auth: c.auth, Sends: c.sends, Digest: c.digest, Moved: c.moved()}, nil
}

// callLogLines bounds the engine's log lines of one call's upstream log
// messages; the call's client hears them all.
const callLogLines = 20

// Invoke implements engine.Invoker.
func (inv Invoker) Invoke(ctx context.Context, p *engine.Prepared) (*engine.Response, error) {
	e := &p.Plugin.Execution
	if p.Trace {
		p.Sent(inv.sent(ctx, p))
	}
	ctx, span := startCall(ctx, e)
	defer span.End()
	var traceparent string
	if e.PropagatesTrace() {
		traceparent = tracing.Traceparent(ctx)
	}
	var logs atomic.Int64 // the upstream's log messages while the call runs
	call := Call{
		Server:      e.MCPID,
		Tool:        e.ToolName,
		Arguments:   p.Arguments,
		Credentials: p.Credentials,
		Headers:     e.Headers,
		OnSecrets:   p.AddSecrets,
		Traceparent: traceparent,
		Destination: p.Destination,
		// What the upstream says while the call runs, masked by the
		// call's masker (Prepared.Notify), to the call's client only.
		OnLog: func(lp *logMessage) {
			n := p.Notify(ctx, engine.Notice{Log: true, Level: string(lp.Level), Logger: lp.Logger, Data: logData(lp.Data)})
			if logs.Add(1) <= callLogLines { // the upstream decides how many come, and how long
				level, logger, data := n.Kept()
				inv.Manager.logger().InfoContext(ctx, "upstream MCP log message", "plugin", p.Plugin.Name, "level", level, "logger", logger, "data", data)
			}
		},
	}
	// The server's questions go to the executor, which decides whom to
	// ask (or that nobody can be): with the call's own context, which
	// carries its client's asker.
	call.OnAsk = func(q engine.Question) (engine.Answer, error) { return p.Ask(ctx, q) }
	call.Settle = engine.Listening(ctx)
	if engine.ProgressWanted(ctx) {
		call.OnProgress = func(pp *sdk.ProgressNotificationParams) {
			p.Notify(ctx, engine.Notice{Progress: pp.Progress, Total: pp.Total, Message: pp.Message})
		}
	}
	res, err := inv.Manager.CallTool(ctx, call)
	if more := logs.Load() - callLogLines; more > 0 {
		inv.Manager.logger().InfoContext(ctx, "upstream MCP log messages not logged", "plugin", p.Plugin.Name, "count", more, "logged", callLogLines)
	}
	if changed, ok := errors.AsType[*DestinationChangedError](err); ok {
		endCall(span, err)
		// An approved call (Once) is bound to the row a person saw, any
		// other to the row where its stored keys were judged to go.
		code, what := engine.CodeCredentialNotBound, "where its stored credentials go was judged on the row before"
		if p.Once {
			code, what = engine.CodeConfirmationStale, "the call was approved"
		}
		return nil, &engine.RefusedError{ToolError: engine.ToolError{Code: code,
			Message: changed.Error() + " (" + what + "); nothing was sent"}}
	}
	if err != nil {
		err = toolError(p, err)
		endCall(span, err)
		return nil, err
	}
	out := ResultOf(res)
	body, err := json.Marshal(out)
	if err != nil {
		return nil, &engine.ToolError{Code: CodeMCPError, Message: "the MCP result cannot be encoded: " + err.Error()}
	}
	resp := &engine.Response{StatusCode: http.StatusOK, ContentType: "application/json", Body: body, Attempts: 1, Relay: relay{out}}
	if p.MaxResponseBytes > 0 && int64(len(body)) > p.MaxResponseBytes {
		return &engine.Response{Attempts: 1}, &engine.ToolError{Code: engine.CodeResponseTooLarge,
			Message: fmt.Sprintf("the MCP result is %d bytes, over the limit of %d", len(body), p.MaxResponseBytes)}
	}
	if out.IsError && !p.Relay {
		// Whole: the executor cuts it after masking, so that no cut splits
		// an echoed secret into a part the masker cannot recognize.
		return resp, &engine.ToolError{Code: CodeToolError, Message: strings.ToValidUTF8("the tool reported an error: "+out.Text(), "")}
	}
	return resp, nil
}

// sent is the trace of a tools/call (engine.Call.Trace): the method, the
// server's URL (without userinfo, its credential parameters written "…";
// a stdio server: "stdio:" and its name)
// and the params, tool name and arguments. The HTTP requests of the
// session (headers, the auth applied) are the session's, shared between
// calls: they are not shown.
func (inv Invoker) sent(ctx context.Context, p *engine.Prepared) *engine.SentRequest {
	e := &p.Plugin.Execution
	c, err := inv.Manager.config(ctx, e.MCPID)
	if err != nil {
		return nil // refused: nothing is sent
	}
	target := "stdio:" + c.name
	if c.transport != store.TransportStdio {
		target = c.url
		if u, err := url.Parse(c.url); err == nil {
			u.User = nil
			target = u.String()
		}
		// A key in its query (a hosted gateway's ?api_key=, review80) is
		// the server's, not the trace's (trace82).
		target = redact.Location(target)
	}
	args := p.Arguments
	if args == nil {
		args = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"name": e.ToolName, "arguments": args})
	return &engine.SentRequest{Method: "tools/call", URL: target, Body: string(body)}
}

// toolError classifies a failure of CallTool for the executor: refusals
// for what was never sent, a ToolError for a JSON-RPC error answer, and the
// transport error itself otherwise (the executor tells timeouts, egress
// denials and connection failures apart).
func toolError(p *engine.Prepared, err error) error {
	refuse := func(code, msg string, details any) error {
		return &engine.RefusedError{ToolError: engine.ToolError{Code: code, Message: msg, Details: details}}
	}
	var missing *auth.MissingCredentialsError
	var rpc *jsonrpc.Error
	switch {
	case errors.Is(err, ErrServerNotFound):
		return refuse(engine.CodeInvalidPlugin, fmt.Sprintf("the tool %s calls the MCP server %q, which is not registered", p.Plugin.Name, p.Plugin.Execution.MCPID), nil)
	case errors.Is(err, ErrServerDisabled):
		return refuse(engine.CodePluginDisabled, fmt.Sprintf("the MCP server of the tool %s is disabled", p.Plugin.Name), nil)
	case errors.As(err, &missing):
		return refuse(engine.CodeMissingCredentials,
			"missing credentials: "+strings.Join(missing.Keys, ", ")+" (the MCP server's auth config needs them; declare them in the plugin's required_credentials and store them for the user)",
			map[string]any{"missing": missing.Keys})
	case errors.Is(err, auth.ErrSecretTooShort):
		return refuse(engine.CodeAuthError, "a credential cannot be sent: "+err.Error(), nil)
	case errors.As(err, &rpc) && rpc.Code != codeRejected:
		return &engine.ToolError{Code: CodeMCPError, Message: "the MCP server refused the call: " + rpc.Message,
			Details: map[string]any{"rpc_code": rpc.Code}}
	}
	return err
}
