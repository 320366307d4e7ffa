package openapiquery

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/egress/egresstest"
)

// envStdioServer turns the test binary into the stdio server of the
// document it names (see TestMain), for clients that start a command.
const envStdioServer = "OPENAPIQUERY_TEST_STDIO_SERVER"

func TestMain(m *testing.M) {
	if doc := os.Getenv(envStdioServer); doc != "" {
		if err := ServeStdio(context.Background(), ServerOptions{DefaultSource: doc, AllowFiles: true}); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// connect returns a go-sdk client session to a server with opts, over an
// in-memory transport or streamable HTTP on httptest.
func connect(t *testing.T, overHTTP bool, opts ServerOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	var transport mcp.Transport
	if overHTTP {
		srv := httptest.NewServer(Handler(opts))
		t.Cleanup(srv.Close)
		transport = &mcp.StreamableClientTransport{Endpoint: srv.URL}
	} else {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := NewServer(opts).Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		transport = ct
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and returns its text and whether it is an error.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents", name, len(res.Content))
	}
	return res.Content[0].(*mcp.TextContent).Text, res.StructuredContent, res.IsError
}

func TestServer(t *testing.T) {
	fastapi, _ := filepath.Abs("testdata/fastapi.json")
	for _, overHTTP := range []bool{false, true} {
		name := "in-memory"
		if overHTTP {
			name = "streamable HTTP"
		}
		t.Run(name, func(t *testing.T) {
			cs := connect(t, overHTTP, ServerOptions{DefaultSource: fastapi, Client: egresstest.Client(t)})
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(ToolNames))) {
				t.Errorf("tools %v, want %v", names, ToolNames)
			}

			for _, c := range []struct {
				tool string
				args map[string]any
				want string // in the text
			}{
				{"search_operations", map[string]any{"query": "purchase requisition", "method": nil, "limit": 5}, `"operationId":"purchase_requisition_list"`},
				{"search_operations", map[string]any{"query": "item", "match": map[string]any{"tag": false, "description": false}, "method": "DELETE"}, `"delete_item_items__item_id__delete"`},
				{"get_request_schema", map[string]any{"operationId": "read_item_items__item_id__get"}, `"header":{"type":"object","properties":{"X-User-Id"`},
				{"get_response_schema", map[string]any{"operationId": "read_item_items__item_id__get"}, `"422":{"selectedContentType":"application/json"`},
				{"build_call_plan", map[string]any{"operationId": "purchase_requisition_list", "params": map[string]any{
					"query": map[string]any{"status": "APPROVED"}, "headers": map[string]any{"X-User-Id": "123"}}}, `"headers":{"X-User-Id":"123"}`},
				{"get_api_info", nil, `"title": "HR API"`},
				{"list_endpoints", map[string]any{"method": "get", "limit": 2, "offset": 1}, `"total": 3`},
				{"search_endpoints", map[string]any{"query": "item", "searchIn": "summary", "limit": 1}, `"total": 4`},
				{"get_endpoint_details", map[string]any{"path": "/items/{item_id}", "method": "delete"}, `"operationId": "delete_item_items__item_id__delete"`},
				{"list_schemas", map[string]any{"limit": 1, "offset": 3}, `"results": [
    "ValidationError"
  ]`},
				{"get_schema_details", map[string]any{"name": "HTTPValidationError"}, `"dependencies": [
    "ValidationError"
  ]`},
			} {
				text, structured, isErr := callTool(t, cs, c.tool, c.args)
				if isErr || !strings.Contains(text, c.want) {
					t.Errorf("%s %v: isError %v, text %.600s; want %s", c.tool, c.args, isErr, text, c.want)
				}
				var fromText any
				if err := json.Unmarshal([]byte(text), &fromText); err != nil {
					t.Errorf("%s: text is not JSON: %v", c.tool, err)
				}
				if _, ok := structured.(map[string]any); !ok {
					t.Errorf("%s: structuredContent %T, want an object", c.tool, structured)
				}
			}

			// Seed 000 errors: error objects with isError.
			for _, c := range []struct {
				tool string
				args map[string]any
				code string
			}{
				{"search_operations", map[string]any{"method": "FETCH"}, CodeInvalidArguments},
				{"search_operations", map[string]any{"limit": 0}, CodeInvalidArguments},
				{"search_operations", map[string]any{"query": strings.Repeat("a", 2001)}, CodeInvalidArguments}, // issue 30
				{"get_request_schema", map[string]any{"operationId": "nope"}, CodeOperationNotFound},
				{"get_response_schema", map[string]any{}, CodeInvalidArguments},
				{"build_call_plan", map[string]any{"operationId": "read_item_items__item_id__get", "params": map[string]any{"path": map[string]any{"item_id": "x"}}}, CodeInvalidParams},
			} {
				text, structured, isErr := callTool(t, cs, c.tool, c.args)
				var obj struct {
					Error struct {
						Code    string         `json:"code"`
						Message string         `json:"message"`
						Details map[string]any `json:"details"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(text), &obj); err != nil || !isErr || obj.Error.Code != c.code || obj.Error.Message == "" || obj.Error.Details == nil {
					t.Errorf("%s %v: isError %v, %s; want error code %s", c.tool, c.args, isErr, text, c.code)
				}
				if structured == nil {
					t.Errorf("%s: error without structuredContent", c.tool)
				}
			}
		})
	}
}

func TestServerSeed003Errors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{not json"), 0o600)
	fastapi := "testdata/fastapi.json"
	cs := connect(t, false, ServerOptions{AllowFiles: true}) // no default document
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"get_api_info", nil, "spec_path is required"},
		{"list_endpoints", map[string]any{"spec_path": ""}, "spec_path is required"},
		{"get_api_info", map[string]any{"spec_path": "testdata/missing.json"}, "Could not load spec from testdata/missing.json: no such file or directory"},
		{"get_api_info", map[string]any{"spec_path": bad}, "Failed to parse OpenAPI document"},
		{"list_endpoints", map[string]any{"spec_path": fastapi, "method": "FETCH"}, "Invalid HTTP method: FETCH"},
		{"list_endpoints", map[string]any{"spec_path": fastapi, "limit": 0}, "limit must be a positive integer"},
		{"list_endpoints", map[string]any{"spec_path": fastapi, "limit": 1.5}, "limit must be a positive integer"},
		{"list_schemas", map[string]any{"spec_path": fastapi, "offset": -1}, "offset must be a non-negative integer"},
		{"search_endpoints", map[string]any{"spec_path": fastapi, "query": "x", "searchIn": "body"}, "Invalid searchIn value: body"},
		{"search_endpoints", map[string]any{"spec_path": fastapi}, "query is required"},
		{"search_endpoints", map[string]any{"spec_path": fastapi, "query": strings.Repeat("a", 2001)}, "query over the limit of 2000 characters (BLINDEXEC_MAX_QUERY_CHARS); say in a few words what the tool should do"},
		{"get_endpoint_details", map[string]any{"spec_path": fastapi, "method": "GET"}, "path is required"},
		{"get_endpoint_details", map[string]any{"spec_path": fastapi, "path": "/nope"}, "method is required"},
		{"get_endpoint_details", map[string]any{"spec_path": fastapi, "path": "/nope", "method": "GET"}, "No endpoint found at /nope GET"},
		{"get_schema_details", map[string]any{"spec_path": fastapi}, "name is required"},
		{"get_schema_details", map[string]any{"spec_path": fastapi, "name": "Nope"}, "No schema found with name: Nope"},
	} {
		text, _, isErr := callTool(t, cs, c.tool, c.args)
		if !isErr || text != "Error: "+c.want {
			t.Errorf("%s %v: isError %v, %q; want %q", c.tool, c.args, isErr, text, "Error: "+c.want)
		}
	}
	// The seed 000 tools answer the same condition with an error object.
	text, _, isErr := callTool(t, cs, "search_operations", nil)
	if !isErr || !strings.Contains(text, `"code":"no_document"`) {
		t.Errorf("search_operations without a document: %s", text)
	}
	// With spec_path, they query that document.
	text, _, isErr = callTool(t, cs, "search_operations", map[string]any{"spec_path": "testdata/cycles.yaml", "query": "node"})
	if isErr || !strings.Contains(text, `"createNode"`) {
		t.Errorf("search_operations with spec_path: %s", text)
	}
}

// TestServerNoFilesOverHTTP: a server that does not allow files (the one
// under serve) refuses a spec_path naming one.
func TestServerNoFilesOverHTTP(t *testing.T) {
	cs := connect(t, true, ServerOptions{Client: egresstest.Client(t)})
	text, _, isErr := callTool(t, cs, "get_api_info", map[string]any{"spec_path": "/etc/passwd"})
	if !isErr || text != "Error: Could not load spec from /etc/passwd: local files are not served here; give an http(s) URL" {
		t.Errorf("file over HTTP: %q", text)
	}
	text, _, isErr = callTool(t, cs, "search_operations", map[string]any{"spec_path": "/etc/passwd"})
	if !isErr || !strings.Contains(text, `"code":"fetch_failed"`) || !strings.Contains(text, "local files are not served") {
		t.Errorf("file over HTTP: %q", text)
	}
}
