// Package mcptest runs a real MCP server on loopback for tests: the go-sdk
// server over streamable HTTP (or SSE) on an httptest server, with tools
// that exercise the engine: $defs, a recursive type, a failing tool, a slow
// tool, seed 004's treatment plan and seed 002's rb.answer. It records
// what it received.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call is a tools/call the server received.
type Call struct {
	Tool      string
	Arguments map[string]any
	Header    http.Header    // of the HTTP request that carried it
	Meta      map[string]any // params._meta
}

// Server is a running test MCP server.
type Server struct {
	*httptest.Server
	// URL of the MCP endpoint (streamable HTTP, or SSE with NewSSE).
	Endpoint string
	MCP      *sdk.Server

	handler atomic.Pointer[http.Handler]
	newH    func() http.Handler

	mu       sync.Mutex
	calls    []Call
	sessions int
	headers  []http.Header
}

// New starts a server speaking streamable HTTP at /mcp.
func New(t testing.TB) *Server {
	s := newServer()
	s.newH = func() http.Handler {
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.MCP }, nil)
	}
	s.start(t)
	return s
}

// NewSSE starts a server speaking the (2024-11-05) SSE transport at /mcp.
func NewSSE(t testing.TB) *Server {
	s := newServer()
	s.newH = func() http.Handler {
		return sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s.MCP }, nil)
	}
	s.start(t)
	return s
}

// ForgetSessions makes the server forget every session, as a restarted
// server would: a client's next request on one gets 404.
func (s *Server) ForgetSessions() {
	h := s.newH()
	s.handler.Store(&h)
}

func (s *Server) start(t testing.TB) {
	s.ForgetSessions()
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		(*s.handler.Load()).ServeHTTP(w, r)
	}))
	s.Server = httptest.NewServer(mux)
	s.Endpoint = s.URL + "/mcp"
	t.Cleanup(s.Close)
}

// Close ends every connection, then the server: the engine's upstream
// sessions keep a standalone GET stream open until their manager closes
// them, and httptest's Close alone waits for that request to finish, so a
// test that closes its upstream before the manager would wait forever.
func (s *Server) Close() {
	s.Server.CloseClientConnections()
	s.Server.Close()
}

func newServer() *Server {
	s := &Server{}
	s.MCP = sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, &sdk.ServerOptions{
		InitializedHandler: func(context.Context, *sdk.InitializedRequest) {
			s.mu.Lock()
			s.sessions++
			s.mu.Unlock()
		},
	})
	for _, tool := range tools {
		s.AddTool(tool.name, tool.description, tool.schema, tool.handle)
	}
	return s
}

// AddTool adds (or replaces) a tool whose handler receives the decoded
// arguments and returns the result.
func (s *Server) AddTool(name, description, schema string, handle func(ctx context.Context, args map[string]any) *sdk.CallToolResult) {
	s.MCP.AddTool(&sdk.Tool{Name: name, Description: description, InputSchema: json.RawMessage(schema)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args map[string]any
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			var h http.Header
			if req.Extra != nil {
				h = req.Extra.Header
			}
			s.mu.Lock()
			s.calls = append(s.calls, Call{Tool: name, Arguments: args, Header: h, Meta: req.Params.Meta})
			s.mu.Unlock()
			return handle(ctx, args), nil
		})
}

// Calls returns the tools/calls received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Sessions counts the sessions initialized so far.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions
}

// Headers returns the headers of every HTTP request received so far.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

type tool struct {
	name, description, schema string
	handle                    func(ctx context.Context, args map[string]any) *sdk.CallToolResult
}

// JSONResult is a result whose text and structured content are v.
func JSONResult(v any) *sdk.CallToolResult {
	b, _ := json.Marshal(v)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}, StructuredContent: v}
}

// The tools every Server has.
var tools = []tool{
	{
		name:        "echo",
		description: "Returns its arguments.",
		schema:      `{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"}},"additionalProperties":true}`,
		handle: func(_ context.Context, args map[string]any) *sdk.CallToolResult {
			return JSONResult(map[string]any{"arguments": args})
		},
	},
	{
		// Seed 004's example.
		name:        "generate_disease_treatment_plan",
		description: "基于疾病ID生成个性化治疗方案",
		schema: `{"type":"object","properties":{
			"disease_id":{"type":"string","description":"疾病编号"},
			"include_drugs":{"type":"string","description":"是否包含药物"},
			"patient_age":{"type":"integer","description":"患者年龄"},
			"severity":{"type":"string","enum":["mild","moderate","severe"]}},
			"required":["disease_id","patient_age"]}`,
		handle: func(_ context.Context, args map[string]any) *sdk.CallToolResult {
			return JSONResult(map[string]any{"treatment_plan": map[string]any{
				"disease_id": args["disease_id"], "patient_age": args["patient_age"],
				"include_drugs": args["include_drugs"], "steps": []string{"rest", "fluids"}}})
		},
	},
	{
		name:        "create_order",
		description: "Creates an order; its schema uses $defs.",
		schema: `{"type":"object","$defs":{
			"Address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["city"]},
			"Item":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}}},
			"properties":{"ship_to":{"$ref":"#/$defs/Address"},"items":{"type":"array","items":{"$ref":"#/$defs/Item"}},
			"broken":{"$ref":"#/$defs/Missing"}},
			"required":["ship_to"]}`,
		handle: func(_ context.Context, args map[string]any) *sdk.CallToolResult {
			return JSONResult(map[string]any{"order_id": "o-1", "ship_to": args["ship_to"]})
		},
	},
	{
		name:        "tree",
		description: "Takes a recursive tree.",
		schema: `{"type":"object","$defs":{"Node":{"type":"object","description":"a node",
			"properties":{"label":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}},
			"properties":{"root":{"$ref":"#/$defs/Node"}}}`,
		handle: func(_ context.Context, args map[string]any) *sdk.CallToolResult {
			return JSONResult(map[string]any{"root": args["root"]})
		},
	},
	{
		name:        "fail",
		description: "Always fails at tool level.",
		schema:      `{"type":"object","properties":{"reason":{"type":"string"}}}`,
		handle: func(_ context.Context, args map[string]any) *sdk.CallToolResult {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("failed: %v", args["reason"])}}}
		},
	},
	{
		name:        "slow",
		description: "Answers after ms milliseconds.",
		schema:      `{"type":"object","properties":{"ms":{"type":"integer"}}}`,
		handle: func(ctx context.Context, args map[string]any) *sdk.CallToolResult {
			ms, _ := args["ms"].(float64)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
			}
			return JSONResult(map[string]any{"slept_ms": ms})
		},
	},
	{
		// Seed 002's tool, whose name breaks the OpenAI rule.
		name:        "rb.answer",
		description: "Answer questions about on-call procedures using runbook knowledge base with optional LLM summarization",
		schema: `{"type":"object","properties":{
			"question":{"type":"string","description":"Question about procedures, troubleshooting, or system behavior"},
			"topK":{"type":"number","description":"Number of relevant sources to consider (default: 5, max: 20)","minimum":1,"maximum":20},
			"useLLM":{"type":"boolean","description":"Whether to use LLM for summary generation (default: true)"}},
			"required":["question"]}`,
		handle: func(_ context.Context, args map[string]any) *sdk.CallToolResult {
			return JSONResult(map[string]any{"question": args["question"], "mode": "offline", "summary": "restart it"})
		},
	},
}
