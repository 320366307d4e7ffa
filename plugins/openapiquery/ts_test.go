package openapiquery

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/blindexec/blindexec/engine/egress/egresstest"
)

// tsDir holds the pinned TypeScript MCP SDK (npm ci --prefix tests/mcp-ts).
const tsDir = "../../tests/mcp-ts"

// TestTypeScriptClient runs tests/mcp-ts/openapi_client.mjs, on the
// official TypeScript SDK, against the server over streamable HTTP and
// over stdio (this test binary in its server role, see TestMain).
func TestTypeScriptClient(t *testing.T) {
	if _, err := os.Stat(filepath.Join(tsDir, "node_modules/@modelcontextprotocol/sdk")); err != nil {
		t.Skipf("TypeScript SDK not installed (npm ci --prefix tests/mcp-ts): %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the TypeScript SDK is installed but node is not: %v", err)
	}
	fastapi, _ := filepath.Abs("testdata/fastapi.json")
	script, _ := filepath.Abs(filepath.Join(tsDir, "openapi_client.mjs"))
	run := func(t *testing.T, env []string, args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		t.Logf("%s", out)
		if err != nil {
			t.Fatalf("openapi_client.mjs %v: %v", args, err)
		}
	}
	t.Run("streamable HTTP", func(t *testing.T) {
		srv := httptest.NewServer(Handler(ServerOptions{DefaultSource: fastapi, Client: egresstest.Client(t)}))
		defer srv.Close()
		run(t, nil, "http", srv.URL)
	})
	t.Run("stdio", func(t *testing.T) {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		run(t, []string{envStdioServer + "=" + fastapi}, "stdio", self)
	})
}
