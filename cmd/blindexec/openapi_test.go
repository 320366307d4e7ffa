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
