package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/internal/tcpproxy"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestStdioOutageGrace: `mcp serve --stdio` keeps to the outage grace as
// serve does. With the database cut, a call within the grace is served
// from what the process read; past it the call is refused
// (database_unavailable, nothing sent). Before, stdio served its catalog
// and credentials for as long as the outage lasted, the grace being
// checked only by the HTTP routes.
func TestStdioOutageGrace(t *testing.T) {
	dsn := testdb.DSN(t, store.DialectMySQL)
	const db = "127.0.0.1:3306"
	if !strings.Contains(dsn, "tcp("+db+")") {
		t.Skipf("the test database is not at %s: %s", db, dsn)
	}
	proxy, err := tcpproxy.New(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	up, hits := countingUpstream(t)
	c := newCLI(t)
	c.db = strings.Replace(dsn, "tcp("+db+")", "tcp("+proxy.Addr()+")", 1)
	if strings.Contains(c.db, "?") {
		c.db += "&timeout=1s&readTimeout=2s&writeTimeout=2s"
	} else {
		c.db += "?timeout=1s&readTimeout=2s&writeTimeout=2s"
	}
	if code, _, errs := c.run("", "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errs)
	}
	file := filepath.Join(t.TempDir(), "plugin.json")
	os.WriteFile(file, []byte(`{"name":"lookup","description":"Looks up.","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"`+up.URL+`"}}`), 0o600)
	if code, out, errs := c.run("", "plugin", "add", file); code != 0 {
		t.Fatalf("plugin add: %d %q %q", code, out, errs)
	}

	cmd := exec.Command(os.Args[0], "--db", c.db, "mcp", "serve", "--stdio")
	cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=7",
		"BLINDEXEC_DB_OUTAGE_GRACE_MS=1500", "BLINDEXEC_CHANGE_POLL_MS=100")
	ctx := context.Background()
	sess, err := sdk.NewClient(&sdk.Implementation{Name: "outage-test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	call := func() (*sdk.CallToolResult, string) {
		t.Helper()
		res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: "lookup", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return res, res.Content[0].(*sdk.TextContent).Text
	}
	if res, text := call(); res.IsError || hits.Load() != 1 {
		t.Fatalf("a call with the database up: %s, %d sent", text, hits.Load())
	}
	time.Sleep(300 * time.Millisecond) // its record written

	proxy.Refuse()
	if res, text := call(); res.IsError || hits.Load() != 2 {
		t.Errorf("a call within the grace: %s, %d sent; want it served", text, hits.Load())
	}
	time.Sleep(2 * time.Second) // past the grace
	res, text := call()
	if !res.IsError || !strings.Contains(text, "database_unavailable") || !strings.Contains(text, "cannot be revalidated") || hits.Load() != 2 {
		t.Errorf("a call past the grace: %s, %d sent; want database_unavailable, nothing sent", text, hits.Load())
	}
}
