package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/mcpimport"
)

// benchMCP is the mcp group (issue 7.8): schema conversion per tool, and
// the proxy call against a direct go-sdk client call.
func benchMCP(ctx context.Context, o benchOpts) error {
	return withTB(func(tb *benchTB) error { return benchMCPTB(ctx, o, tb) })
}

func benchMCPTB(ctx context.Context, o benchOpts, tb *benchTB) error {
	up := mcptest.New(tb)
	if err := benchSchemas(ctx, o, up); err != nil {
		return err
	}
	return benchProxy(ctx, o, up)
}

// toolSchema is one inputSchema to convert.
type toolSchema struct {
	Name        string          `json:"name"`
	Shape       string          `json:"shape"`
	InputSchema json.RawMessage `json:"inputSchema"`
	source      string
}

// listTools lists the tools of an MCP server over transport.
func listTools(ctx context.Context, t sdk.Transport, source string) ([]toolSchema, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "blindexec-bench", Version: "1"}, nil).Connect(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var out []toolSchema
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			return nil, err
		}
		out = append(out, toolSchema{Name: tool.Name, InputSchema: b, source: source})
	}
	return out, nil
}

// wideSchema is a flat tool with 60 described properties of every kind,
// like the search tools of data providers.
func wideSchema() toolSchema {
	props := map[string]any{}
	kinds := []map[string]any{
		{"type": "string"},
		{"type": "integer", "minimum": 0},
		{"type": "number"},
		{"type": "boolean"},
		{"type": "string", "enum": []string{"asc", "desc"}},
		{"type": "array", "items": map[string]any{"type": "string"}},
		{"type": "string", "format": "date"},
		{"type": []string{"string", "null"}},
	}
	var required []string
	for i := range 60 {
		s := map[string]any{"description": fmt.Sprintf("Filter number %d of the company search: matches the field exactly unless a wildcard is given.", i)}
		for k, v := range kinds[i%len(kinds)] {
			s[k] = v
		}
		name := fmt.Sprintf("filter_%02d", i)
		props[name] = s
		if i%10 == 0 {
			required = append(required, name)
		}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required})
	return toolSchema{Name: "search_companies", Shape: "data provider: 60 flat described properties", InputSchema: b, source: "bench (generated)"}
}

// everythingJS is the entry point of the pinned reference server, when
// tests/mcp-ts is installed.
func everythingJS(root string) (string, error) {
	js := filepath.Join(root, "tests/mcp-ts/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(js); err != nil {
		return "", errors.New("tests/mcp-ts/node_modules is absent (npm ci --prefix tests/mcp-ts)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("node is not installed")
	}
	return js, nil
}

func benchSchemas(ctx context.Context, o benchOpts, up *mcptest.Server) error {
	var file struct {
		Tools []toolSchema `json:"tools"`
	}
	b, err := os.ReadFile(filepath.Join(o.root, "bench/testdata/mcp-tool-schemas.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return fmt.Errorf("mcp-tool-schemas.json: %w", err)
	}
	var set []toolSchema
	for _, t := range file.Tools {
		t.source = "bench/testdata"
		set = append(set, t)
	}
	set = append(set, wideSchema())
	listed, err := listTools(ctx, &sdk.StreamableClientTransport{Endpoint: up.Endpoint, DisableStandaloneSSE: true}, "mcptest (go-sdk, loopback)")
	if err != nil {
		return fmt.Errorf("list mcptest tools: %w", err)
	}
	set = append(set, listed...)
	everythingNote := ""
	if js, err := everythingJS(o.root); err != nil {
		everythingNote = "server-everything skipped: " + err.Error()
	} else {
		listed, err := listTools(ctx, &sdk.CommandTransport{Command: exec.Command("node", js, "stdio")}, "server-everything (stdio)")
		if err != nil {
			return fmt.Errorf("list server-everything tools: %w", err)
		}
		set = append(set, listed...)
		everythingNote = fmt.Sprintf("server-everything: %d tools listed over stdio", len(listed))
	}

	srv := mcpimport.Server{ID: "bench-mcp", Name: "bench"}
	var all, allConvert []time.Duration
	fmt.Printf("== MCP: inputSchema → OpenAI parameters per tool (mcpimport.Parameters, depth limit %d), %d conversions each\n", mcpimport.DefaultMaxDepth, o.schemaIters)
	fmt.Printf("   %d tools: bench/testdata/mcp-tool-schemas.json, a generated wide one, mcptest's; %s\n", len(set), everythingNote)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "tool\tsource\tschema bytes\tout bytes\twarnings\tp50\tp99\tmax\twhole plugin p50\twhole plugin p99\t\n")
	for _, t := range set {
		fresh := func() map[string]any {
			var m map[string]any
			if err := json.Unmarshal(t.InputSchema, &m); err != nil {
				panic(fmt.Sprintf("%s: %v", t.Name, err))
			}
			return m
		}
		out, warnings, err := mcpimport.Parameters(fresh(), 0)
		if err != nil {
			return fmt.Errorf("tool %s: %w", t.Name, err)
		}
		// Each conversion gets its own decoded copy (the SDK's decoded
		// inputSchema), decoded before the clock starts: the resolver
		// should not mutate its input, but the figures must not depend on it.
		copies := make([]map[string]any, o.schemaIters)
		for i := range copies {
			copies[i] = fresh()
		}
		runtime.GC()
		d := make([]time.Duration, o.schemaIters)
		for i := range d {
			t0 := time.Now()
			if _, _, err := mcpimport.Parameters(copies[i], 0); err != nil {
				return err
			}
			d[i] = time.Since(t0)
		}
		// The whole plugin: conversion, then the plugin's validation.
		dc := make([]time.Duration, max(o.schemaIters/4, 10))
		tools := make([]*sdk.Tool, len(dc))
		for i := range tools {
			tools[i] = &sdk.Tool{Name: t.Name, Description: t.Shape, InputSchema: fresh()}
		}
		runtime.GC()
		for i, tool := range tools {
			t0 := time.Now()
			if _, _, err := mcpimport.Convert(srv, tool, mcpimport.SanitizeName(t.Name), 0); err != nil {
				return fmt.Errorf("convert %s: %w", t.Name, err)
			}
			dc[i] = time.Since(t0)
		}
		all = append(all, d...)
		allConvert = append(allConvert, dc...)
		sortDurations(d)
		sortDurations(dc)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", t.Name, t.source, len(t.InputSchema), len(out), len(warnings),
			round(quantile(d, .5)), round(quantile(d, .99)), round(d[len(d)-1]), round(quantile(dc, .5)), round(quantile(dc, .99)))
	}
	tw.Flush()
	sortDurations(all)
	sortDurations(allConvert)
	p99 := quantile(all, .99)
	fmt.Printf("   all tools: p50 %s, p99 %s, max %s; whole plugin (conversion + validation) p99 %s\n",
		round(quantile(all, .5)), round(p99), round(all[len(all)-1]), round(quantile(allConvert, .99)))
	fmt.Printf("   targets: p99 < 1 ms: %s; seed 004's 100 ms: %s (p99 is %.4f%% of it)\n\n",
		verdict(p99 < time.Millisecond), verdict(p99 < 100*time.Millisecond), 100*float64(p99)/float64(100*time.Millisecond))
	return nil
}

// bearer adds a bearer token to every request.
type bearer struct {
	next  http.RoundTripper
	token string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// benchProxy compares one tools/call of the loopback MCP server: a direct
// go-sdk client session, the executor with an mcp plugin, the proxy route
// and /v1/execute over HTTP. The server has a bearer auth config; the
// engine takes the token from user 7's stored credentials.
func benchProxy(ctx context.Context, o benchOpts, up *mcptest.Server) error {
	const token = "mcp-bench-token-0123456789"
	e, err := newEnv(ctx, nil)
	if err != nil {
		return err
	}
	defer e.close()
	if err := e.creds.Set(ctx, 7, "MCP_TOKEN", token, "bench"); err != nil {
		return err
	}
	row, err := enginemcp.Register(ctx, e.st, enginemcp.ServerSpec{ID: "bench-mcp", Name: "bench", URL: up.Endpoint,
		AuthConfig: &plugins.AuthConfig{Type: plugins.AuthBearer, Token: "MCP_TOKEN"}}, "bench")
	if err != nil {
		return err
	}
	m := enginemcp.NewManager(e.st, e.client())
	defer m.Close()
	enginemcp.Invoker{Manager: m}.RegisterOn(e.ex)

	// The plugin, as `blindexec import mcp` makes it from the listed tool.
	tools, err := m.Tools(ctx, row.ID, map[string]string{"MCP_TOKEN": token}, true)
	if err != nil {
		return err
	}
	var echo *sdk.Tool
	for _, t := range tools {
		if t.Name == "echo" {
			echo = t
		}
	}
	if echo == nil {
		return errors.New("mcptest has no echo tool")
	}
	auth, err := catalog.MCPServerAuth(row)
	if err != nil {
		return err
	}
	p, _, err := mcpimport.Convert(mcpimport.Server{ID: row.ID, Name: row.Name, Auth: auth}, echo, "bench_echo", 0)
	if err != nil {
		return err
	}
	prow, err := catalog.RowFromPlugin(p)
	if err != nil {
		return err
	}
	if err := e.st.CreatePlugin(ctx, prow); err != nil {
		return err
	}
	srv := httptest.NewServer((&api.Server{Store: e.st, Creds: e.creds, Executor: e.ex, ServiceToken: "bench-service",
		MCP: &api.MCPConfig{Manager: m}, Changes: e.changes}).Handler())
	if _, err := e.changes.Poll(ctx); err != nil {
		return err
	}
	defer srv.Close()

	direct, err := sdk.NewClient(&sdk.Implementation{Name: "bench-direct", Version: "1"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: up.Endpoint, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: bearer{&http.Transport{MaxIdleConnsPerHost: 64}, token}}}, nil)
	if err != nil {
		return err
	}
	defer direct.Close()

	args := map[string]any{"text": "你好, MCP", "n": 1}
	argsJSON, _ := json.Marshal(args)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	post := func(ctx context.Context, path, body string) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer bench-service")
		req.Header.Set("X-User-Id", "7")
		return drain(client.Do(req))
	}
	subjects := []subject{
		{name: "direct go-sdk CallTool", call: func(ctx context.Context) error {
			res, err := direct.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
			if err == nil && res.IsError {
				err = errors.New("isError")
			}
			return err
		}},
		{name: "executor, mcp plugin, stored credentials", call: func(ctx context.Context) error {
			res, err := e.ex.Execute(ctx, engine.Call{Plugin: p, Arguments: argsJSON, UserID: 7})
			if err == nil && !res.OK {
				err = fmt.Errorf("call failed: %s", res.Error.Message)
			}
			return err
		}},
		{name: "POST /v1/mcp/proxy/{mcp_id}/tools/echo/call", call: func(ctx context.Context) error {
			return post(ctx, "/v1/mcp/proxy/bench-mcp/tools/echo/call", string(argsJSON))
		}},
		{name: "POST /v1/execute, catalog mcp plugin", call: func(ctx context.Context) error {
			return post(ctx, "/v1/execute", `{"name":"bench_echo","arguments":`+string(argsJSON)+`,"user_id":7}`)
		}},
	}
	for _, s := range subjects { // each answers, and with the echo
		if err := s.call(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	if calls := up.Calls(); len(calls) != len(subjects) || calls[len(calls)-1].Arguments["text"] != args["text"] ||
		calls[1].Header.Get("Authorization") != "Bearer "+token {
		return fmt.Errorf("the MCP server received %d calls (%+v), want %d with the arguments and the token", len(calls), calls, len(subjects))
	}
	f, err := measure(ctx, subjects, o)
	if err != nil {
		return err
	}
	printTable("== MCP proxy: tools/call of a loopback go-sdk server (streamable HTTP, bearer auth, one session reused)", subjects, f, o)
	return nil
}
