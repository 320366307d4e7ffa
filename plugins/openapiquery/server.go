package openapiquery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/internal/httpbody"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins/openapi"
)

// ServerOptions configure the MCP server of the query tools.
type ServerOptions struct {
	// DefaultSource is the document the tools query when a call gives no
	// spec_path (a [Location]); with it, seed 003's spec_path becomes
	// optional.
	DefaultSource string
	// Client fetches URLs: the egress-guarded client (egress.NewClient).
	Client *http.Client
	// CacheTTL skips fetching a document again within this time of its
	// last fetch (0: fetch on every call, comparing hashes).
	CacheTTL time.Duration
	// AllowFiles lets a call's spec_path name a local file. Leave it off
	// for servers reachable over the network: a client could otherwise
	// probe the server's files. DefaultSource may always be a file.
	AllowFiles bool
	// Cache, when set, is shared instead of a new one (Client and CacheTTL
	// are then ignored).
	Cache  *Cache
	Logger *slog.Logger
	// MaxQueryChars bounds the query of search_operations and
	// searchEndpoints (toolsearch.DefaultMaxQueryChars when 0;
	// BLINDEXEC_MAX_QUERY_CHARS): a longer one is refused before the
	// document is read.
	MaxQueryChars int
}

// NewServer returns an MCP server with the ten query tools.
func NewServer(opts ServerOptions) *mcp.Server {
	s := &server{opts: opts, cache: opts.Cache, log: opts.Logger}
	if s.cache == nil {
		s.cache = NewCache(opts.Client, opts.CacheTTL)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "blindexec-openapi", Version: "1.0.0"}, &mcp.ServerOptions{Logger: opts.Logger})
	for _, t := range s.tools() {
		srv.AddTool(t.tool, t.handler)
	}
	return srv
}

// ServeStdio serves the tools over stdin and stdout until ctx ends or the
// client disconnects (`blindexec mcp openapi --stdio`).
func ServeStdio(ctx context.Context, opts ServerOptions) error {
	return NewServer(opts).Run(ctx, &mcp.StdioTransport{})
}

// Handler serves the tools over streamable HTTP (mount it at /mcp/openapi,
// behind the bearer-token check). It is stateless: the tools keep no
// session state, and every request shares one server and one cache.
func Handler(opts ServerOptions) http.Handler {
	srv := NewServer(opts)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, Logger: opts.Logger, MaxRequestBodyBytes: httpbody.MaxJSON})
}

type server struct {
	opts  ServerOptions
	cache *Cache
	log   *slog.Logger
}

// errNoSpec is a call without spec_path to a server without a default
// document.
var errNoSpec = errors.New("spec_path is required")

// location returns the document a call names: its spec_path, else the
// default document. It is checked before any other argument, as seed 003
// lists spec_path first.
func (s *server) location(a args) (string, error) {
	loc, err := a.str("spec_path")
	switch {
	case err != nil || loc == "":
		if s.opts.DefaultSource == "" {
			return "", errNoSpec
		}
		return s.opts.DefaultSource, nil
	case !s.opts.AllowFiles && !openapi.IsURL(loc):
		return "", &SourceError{Source: loc, Err: errors.New("local files are not served here; give an http(s) URL")}
	}
	return loc, nil
}

// load returns the index of the document at loc.
func (s *server) load(ctx context.Context, loc string) (*Index, error) {
	idx, info, err := s.cache.Get(ctx, loc)
	if err != nil {
		s.log.InfoContext(ctx, "openapi query: document unavailable", "source", redact.Location(loc), "err", err)
		return nil, err
	}
	s.log.DebugContext(ctx, "openapi query: document", "source", redact.Location(loc), "sha256", info.SHA256, "reused", info.Reused, "cached", info.Cached)
	return idx, nil
}

type toolDef struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
}

// call is one tool's work: it reads its arguments and answers.
type call func(ctx context.Context, a args) (any, error)

// seed000 wraps a seed 000 tool: the answer as JSON text and as
// structuredContent, an error as the error object of §6.1 with isError.
func seed000(name, desc, schema string, run call) toolDef {
	return toolDef{&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out, err := withArgs(ctx, req, run)
			if err != nil {
				if errors.Is(err, errNoSpec) {
					err = &Error{Code: CodeNoDocument, Message: "spec_path is required: the server has no default document"}
				}
				e := asError(err)
				return result(e, e, true, false), nil
			}
			structured := out
			if list, ok := out.([]OperationSummary); ok {
				// structuredContent must be an object (the TypeScript SDK
				// rejects anything else); the text keeps the bare list.
				structured = map[string]any{"operations": list}
			}
			return result(out, structured, false, false), nil
		}}
}

// seed003 wraps a seed 003 tool: the answer as JSON text (indented, as the
// seed's JSON.stringify(result, null, 2)) and as structuredContent, an
// error as the text "Error: message" with isError.
func seed003(name, desc, schema string, run call) toolDef {
	return toolDef{&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out, err := withArgs(ctx, req, run)
			if err != nil {
				var se *SourceError
				msg := err.Error()
				switch {
				case errors.As(err, &se) && se.Parse:
					msg = "Failed to parse OpenAPI document"
				case errors.As(err, &se):
					// Seed 003's text stays the prefix; the reason follows.
					msg = "Could not load spec from " + se.Shown()
					if reason := se.Reason(); reason != "" {
						msg += ": " + reason
					}
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Error: " + msg}}, IsError: true}, nil
			}
			return result(out, out, false, true), nil
		}}
}

func withArgs(ctx context.Context, req *mcp.CallToolRequest, run call) (any, error) {
	a, err := parseArgs(req.Params.Arguments)
	if err != nil {
		return nil, err
	}
	return run(ctx, a)
}

func result(text, structured any, isError, indent bool) *mcp.CallToolResult {
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(text, "", "  ")
	} else {
		b, err = json.Marshal(text)
	}
	if err != nil { // only for values a document cannot produce (NaN)
		e := &Error{Code: CodeInternal, Message: "the result cannot be encoded as JSON: " + err.Error()}
		b, _ = json.Marshal(e)
		structured, isError = e, true
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: structured, IsError: isError}
}

// args are a call's arguments, checked by hand so that every message is
// the one the seeds give.
type args map[string]any

func parseArgs(raw json.RawMessage) (args, error) {
	a := args{}
	if len(raw) == 0 || string(raw) == "null" {
		return a, nil
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, &Error{Code: CodeInvalidArguments, Message: "the arguments are not a JSON object"}
	}
	return a, nil
}

// str returns the string argument name: "" when absent or null, an error
// when it is not a string.
func (a args) str(name string) (string, error) {
	switch v := a[name].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", fmt.Errorf("%s must be a string", name)
}

// int returns the integer argument name, def when absent or null, and
// whether it is present and an integer of at least min.
func (a args) int(name string, def, min int) (int, bool) {
	switch v := a[name].(type) {
	case nil:
		return def, true
	case float64:
		if v == math.Trunc(v) && v >= float64(min) && v <= math.MaxInt32 {
			return int(v), true
		}
	}
	return 0, false
}

// object returns the object argument name, nil when absent or null.
func (a args) object(name string) (map[string]any, bool) {
	switch v := a[name].(type) {
	case nil:
		return nil, true
	case map[string]any:
		return v, true
	}
	return nil, false
}

func invalidArgument(name, msg string, value any) *Error {
	return &Error{Code: CodeInvalidArguments, Message: name + " " + msg, Details: map[string]any{"argument": name, "value": value}}
}
