package openapiquery

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/internal/mcpts"
)

// TestTypeScriptClient runs tests/mcp-ts/openapi_client.mjs, on the
// official TypeScript SDK, against the server over streamable HTTP and
// over stdio (this test binary in its server role, see TestMain).
func TestTypeScriptClient(t *testing.T) {
	mcpts.Require(t)
	fastapi, _ := filepath.Abs("testdata/fastapi.json")
	run := func(t *testing.T, env []string, args ...string) {
		t.Logf("%s", mcpts.Run(t, time.Minute, env, "openapi_client.mjs", args...))
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
