// Package mcpserver serves the plugin catalog as an MCP server: any MCP
// client can list the enabled plugins as tools and call them, executed
// blind by the engine for one user, HTTP and MCP plugins alike.
//
// A tool is what the LLM sees of a plugin and nothing more: its name,
// description and, as inputSchema, Plugin.LLMParameters (parameters
// without the fixed ones). Execution, auth config, fixed params and
// credentials never reach the client.
//
// The tool list follows the catalog: a server re-registers its tools when
// the catalog's version moved since it last did, and at no other time.
//
// A call's result is the engine's output as text content, plus
// structuredContent when the output is a JSON object; a call that is not
// ok (refused, failed upstream, a tool error) has isError set and the
// engine's error object as its text.
package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/plugins"
)

// EnvUser names the setting of the user `blindexec mcp serve --stdio`
// acts for (a RuoYi user id).
const EnvUser = "BLINDEXEC_MCP_USER"

// Catalog is where the server finds plugins: *catalog.Catalog.
type Catalog interface {
	// EnabledPlugins lists the enabled plugins, bringing the catalog up
	// to date.
	EnabledPlugins(ctx context.Context) ([]*plugins.Plugin, error)
	// Version moves whenever the catalog changes.
	Version() int64
}

// Executor executes calls: *engine.Executor.
type Executor interface {
	Execute(ctx context.Context, call engine.Call) (*engine.Result, error)
}

// NewServer returns an MCP server offering cat's enabled plugins, executed
// by ex for userID.
func NewServer(cat Catalog, ex Executor, userID int64, logger *slog.Logger) *sdk.Server {
	logger = cmp.Or(logger, slog.Default())
	s := sdk.NewServer(&sdk.Implementation{Name: "blindexec", Version: "1"}, &sdk.ServerOptions{
		Logger:       logger,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	t := &tools{server: s, cat: cat, ex: ex, user: userID, log: logger, added: map[string]bool{}, synced: -1}
	s.AddReceivingMiddleware(t.middleware)
	return s
}

// tools keeps the server's tool set in step with the catalog.
type tools struct {
	server *sdk.Server
	cat    Catalog
	ex     Executor
	user   int64
	log    *slog.Logger

	mu     sync.Mutex
	added  map[string]bool
	synced int64 // the catalog version the tools were registered at
}

func (t *tools) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		var err error
		if method == "tools/list" || method == "tools/call" {
			err = t.sync(ctx)
		}
		if err != nil {
			t.log.ErrorContext(ctx, "MCP catalog unavailable", "method", method, "err", err)
			return nil, errors.New("the catalog is unavailable; see the engine's log")
		}
		return next(ctx, method, req)
	}
}

// sync registers the enabled plugins as tools, and removes the others, if
// the catalog changed since it last did: a disabled or deleted plugin is
// then an unknown tool to the SDK.
func (t *tools) sync(ctx context.Context) error {
	ps, err := t.cat.EnabledPlugins(ctx)
	if err != nil {
		return err
	}
	version := t.cat.Version()
	t.mu.Lock()
	defer t.mu.Unlock()
	if version == t.synced {
		return nil
	}
	keep := make(map[string]bool, len(ps))
	for _, p := range ps {
		if t.add(p) {
			keep[p.Name] = true
		}
	}
	var gone []string
	for name := range t.added {
		if !keep[name] {
			gone = append(gone, name)
		}
	}
	t.server.RemoveTools(gone...)
	t.added, t.synced = keep, version
	return nil
}

// add adds or replaces p's tool; false when its parameters cannot be an
// MCP inputSchema (the plugin is then left out).
func (t *tools) add(p *plugins.Plugin) bool {
	params := p.LLMParameters(nil)
	var root map[string]any
	if json.Unmarshal(params, &root) != nil || root["type"] != "object" {
		t.log.Warn("plugin left out of the MCP catalog: parameters are not an object schema", "plugin", p.Name)
		return false
	}
	tool := p.Tool(nil).Function
	t.server.AddTool(&sdk.Tool{Name: tool.Name, Title: p.Title, Description: tool.Description, InputSchema: params},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := t.ex.Execute(ctx, engine.Call{Plugin: p, Arguments: req.Params.Arguments, UserID: t.user})
			return result(res, err), nil
		})
	return true
}

// result turns the engine's answer into an MCP result.
func result(res *engine.Result, err error) *sdk.CallToolResult {
	var refused *engine.RefusedError
	if err != nil && !errors.As(err, &refused) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the call failed: " + err.Error()}}}
	}
	if !res.OK {
		b, _ := json.Marshal(map[string]any{"error": res.Error, "http_status": res.HTTPStatus, "execution_id": res.ExecutionID})
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
	}
	out := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Text()}}}
	if len(res.Output) > 0 && res.Output[0] == '{' {
		out.StructuredContent = res.Output
	}
	return out
}

// Handler serves the catalog over streamable HTTP (mount it at /mcp). It is
// stateless: every request is authenticated by authn, which returns the
// user the request acts for (false answers 401), and gets a server for that
// user, so no session can be carried over to another user.
func Handler(cat Catalog, ex Executor, authn func(*http.Request) (userID int64, err error), logger *slog.Logger) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		user, _ := r.Context().Value(userKey{}).(int64)
		return NewServer(cat, ex, user, logger)
	}, &sdk.StreamableHTTPOptions{Stateless: true, Logger: logger})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := authn(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="blindexec"`)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "unauthorized", "message": err.Error()}})
			w.Write(append(body, '\n'))
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}

type userKey struct{}

// ServeStdio serves the catalog over stdin/stdout for userID until ctx ends
// or the client disconnects (`blindexec mcp serve --stdio`, the user from
// BLINDEXEC_MCP_USER).
func ServeStdio(ctx context.Context, cat Catalog, ex Executor, userID int64, logger *slog.Logger) error {
	return NewServer(cat, ex, userID, logger).Run(ctx, &sdk.StdioTransport{})
}
