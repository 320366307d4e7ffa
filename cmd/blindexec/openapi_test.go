package main

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/internal/mcpts"
)

func fastapiDoc(t *testing.T) string {
	p, err := filepath.Abs("../../plugins/openapiquery/testdata/fastapi.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCLIOpenAPIQuery(t *testing.T) {
	c := newCLI(t)
	doc := fastapiDoc(t)
	decode := func(out string) any {
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		return v
	}
	code, out, errs := c.run("", "openapi", "fetch", "--spec", doc)
	if code != 0 || !strings.Contains(out, `"HR API"`) || !strings.Contains(out, "sha256") {
		t.Fatalf("fetch: %d %q %q", code, out, errs)
	}
	code, out, _ = c.run("", "openapi", "search", "--spec", doc, "--query", "purchase requisition", "--limit", "5")
	hits, _ := decode(out).([]any)
	if code != 0 || len(hits) != 1 || hits[0].(map[string]any)["operationId"] != "purchase_requisition_list" {
		t.Fatalf("search: %d %s", code, out)
	}
	code, out, _ = c.run("", "openapi", "schema", "request", "--spec", doc, "--operation-id", "read_item_items__item_id__get")
	if req, _ := decode(out).(map[string]any); code != 0 || req["path"] == nil {
		t.Fatalf("schema request: %d %s", code, out)
	}
	code, out, _ = c.run("", "openapi", "schema", "response", "--spec", doc, "--operation-id", "read_item_items__item_id__get")
	if code != 0 || !strings.Contains(out, `"422"`) {
		t.Fatalf("schema response: %d %s", code, out)
	}
	outFile := filepath.Join(t.TempDir(), "index.json")
	if code, _, errs := c.run("", "openapi", "index", "--spec", doc, "--out", outFile); code != 0 {
		t.Fatalf("index --out: %d %q", code, errs)
	}
	if b, _ := os.ReadFile(outFile); !strings.Contains(string(b), "create_file_files__post") {
		t.Fatalf("index file: %s", b)
	}
	// An unknown operation: the error object on stdout, exit 1.
	code, out, _ = c.run("", "openapi", "schema", "request", "--spec", doc, "--operation-id", "nope")
	if e, _ := decode(out).(map[string]any); code != 1 || e["error"] == nil {
		t.Fatalf("unknown operation: %d %s", code, out)
	}
	if code, _, _ := c.run("", "openapi", "search"); code != 2 {
		t.Fatalf("no document: %d, want 2", code)
	}
}

// TestOpenAPIToolsWithTypeScriptClient drives the query tools with the
// official TypeScript SDK: over stdio from `blindexec mcp openapi --stdio`
// (this test binary in the CLI's role) and over streamable HTTP at
// /mcp/openapi of the API, behind its bearer token.
func TestOpenAPIToolsWithTypeScriptClient(t *testing.T) {
	mcpts.Require(t)
	doc := fastapiDoc(t)
	node := func(t *testing.T, args ...string) {
		mcpts.Run(t, time.Minute, []string{"BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_LOG_LEVEL=error"}, "openapi_client.mjs", args...)
	}
	t.Run("stdio", func(t *testing.T) {
		node(t, "stdio", os.Args[0], "mcp", "openapi", "--stdio", "--spec", doc)
	})
	t.Run("streamable HTTP", func(t *testing.T) {
		cfg := &config{openapiSpec: doc, dial: egresstest.LoopbackOnly((&net.Dialer{}).DialContext)}
		h, err := cfg.openapiTools(slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer((&api.Server{AdminToken: "tools-token", OpenAPITools: h}).Handler())
		defer srv.Close()
		resp, err := http.Post(srv.URL+"/mcp/openapi", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("/mcp/openapi without a token: %d", resp.StatusCode)
		}
		node(t, "http", srv.URL+"/mcp/openapi", "tools-token")
	})
}

// TestOpenAPIToolsTrustOnlyTheDocument: the configured document's address
// is the operator's, so the egress guard lets its fetch through; a
// caller's spec_path naming another port or path of that address, or an
// address BLINDEXEC_EGRESS_ALLOW opens to the catalog, is a caller's URL,
// refused like any internal address (it was fetched: a per-user token
// could read or probe every service on the document's host or in the
// allowlist, a redirect from a public URL included).
func TestOpenAPIToolsTrustOnlyTheDocument(t *testing.T) {
	doc, err := os.ReadFile(fastapiDoc(t))
	if err != nil {
		t.Fatal(err)
	}
	internal := strings.Replace(string(doc), `"HR API"`, `"internal admin API"`, 1)
	serve := func(body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	docSrv, other := serve(string(doc)), serve(internal)
	ctx := t.Context()
	// tools serves /mcp/openapi with doc as the configured document.
	tools := func(cfg *config) func(args map[string]any) (string, bool) {
		cfg.dial = egresstest.LoopbackOnly(nil)
		h, err := cfg.openapiTools(slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		session, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { session.Close() })
		return func(args map[string]any) (string, bool) {
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "get_api_info", Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			return res.Content[0].(*mcp.TextContent).Text, res.IsError
		}
	}
	// Loopback allowed for the catalog (BLINDEXEC_EGRESS_ALLOW): not for a
	// caller's spec_path.
	info := tools(&config{openapiBaseURL: docSrv.URL, egressAllow: "127.0.0.1"})
	if text, isErr := info(map[string]any{}); isErr || !strings.Contains(text, "HR API") {
		t.Fatalf("the configured document: %v %s", isErr, text)
	}
	if text, isErr := info(map[string]any{"spec_path": docSrv.URL + "/openapi.json"}); isErr || !strings.Contains(text, "HR API") {
		t.Fatalf("the configured document named: %v %s", isErr, text)
	}
	for name, specPath := range map[string]string{
		"another port": other.URL + "/openapi.json",
		"another path": docSrv.URL + "/admin/openapi.json",
	} {
		text, isErr := info(map[string]any{"spec_path": specPath})
		if !isErr || strings.Contains(text, "internal admin API") || !strings.Contains(text, "egress denied") {
			t.Errorf("%s: %v %s, want refused by the egress guard", name, isErr, text)
		}
		// Not "allow it with BLINDEXEC_EGRESS_ALLOW": it is set, and opens nothing here.
		if strings.Contains(text, "allow it with") || !strings.Contains(text, "a caller's spec_path stays under the default deny, whatever BLINDEXEC_EGRESS_ALLOW opens") {
			t.Errorf("%s: %s, want the reason no allowance applies", name, text)
		}
	}
	// The configured document redirecting: followed on its origin, not to
	// another port.
	moved := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/here":
			http.Redirect(w, r, "/doc.json", http.StatusFound)
		case "/doc.json":
			w.Write(doc)
		default:
			http.Redirect(w, r, other.URL+"/openapi.json", http.StatusFound)
		}
	}))
	t.Cleanup(moved.Close)
	if text, isErr := tools(&config{openapiSpec: moved.URL + "/here"})(map[string]any{}); isErr || !strings.Contains(text, "HR API") {
		t.Errorf("the configured document, redirected on its origin: %v %s", isErr, text)
	}
	if text, isErr := tools(&config{openapiSpec: moved.URL + "/away"})(map[string]any{}); !isErr || !strings.Contains(text, "egress denied") {
		t.Errorf("the configured document, redirected to another port: %v %s, want refused", isErr, text)
	}
}
