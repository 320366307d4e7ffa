package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCLIQuota: rules added and listed with the CLI apply to exec and
// mcp serve --stdio (a
// one-shot command counts like a replica, and gives back what it did not
// spend when it exits), refusals say the limit, use shows it, rm lifts it.
func TestCLIQuota(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) }))
	defer up.Close()
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "refund.json")
	os.WriteFile(file, []byte(`{"name":"refund","description":"refund an order","parameters":{"type":"object","properties":{}},
		"execution":{"method":"POST","base_url":"`+up.URL+`/refund"}}`), 0o600)
	if code, _, errs := c.run("", "plugin", "add", file); code != 0 {
		t.Fatalf("plugin add: %d %s", code, errs)
	}
	for _, bad := range []struct{ args []string }{
		{[]string{"quota", "add", "r", "--calls", "5", "--window", "week"}},
		{[]string{"quota", "add", "r", "--window", "day"}},
	} {
		if code, _, errs := c.run("", bad.args...); code != 2 || !strings.Contains(errs, "--") {
			t.Errorf("%v: %d %q, want 2 naming the flag", bad.args, code, errs)
		}
	}
	if code, _, errs := c.run("", "quota", "add", "refunds", "--plugin", "refund", "--calls", "2", "--window", "day"); code != 0 {
		t.Fatalf("quota add: %d %s", code, errs)
	}
	if code, out, _ := c.run("", "quota", "list"); code != 0 || !strings.Contains(out, "refunds") || !strings.Contains(out, "2 calls a day") {
		t.Fatalf("quota list: %d %q", code, out)
	}
	for range 2 {
		if code, _, errs := c.run("", "exec", "refund", "--user", "7"); code != 0 {
			t.Fatalf("exec: %d %s", code, errs)
		}
	}
	if code, _, errs := c.run("", "exec", "refund", "--user", "7"); code != 1 || !strings.Contains(errs, "limit reached: 2 calls a day for refund, resets at ") {
		t.Fatalf("third exec: %d %q, want the limit", code, errs)
	}
	// Over stdio too: a tool error saying the limit. (Under the default
	// policy this POST would first wait for the user's approval, issue 33;
	// the quota is the point here.)
	cmd := exec.Command(os.Args[0], "--db", c.db, "mcp", "serve", "--stdio")
	cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=7", "BLINDEXEC_CONFIRM=never")
	sess, err := sdk.NewClient(&sdk.Implementation{Name: "quota-test", Version: "1"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.CallTool(t.Context(), &sdk.CallToolParams{Name: "refund", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "limit reached: 2 calls a day for refund") {
		t.Fatalf("over stdio: %v %+v", err, res)
	}
	sess.Close()
	if code, out, _ := c.run("", "quota", "use", "--user", "7"); code != 0 || !strings.Contains(out, "refunds") || !strings.Contains(out, "  2  ") {
		t.Fatalf("quota use: %d %q", code, out)
	}
	if code, _, _ := c.run("", "quota", "rm", "refunds"); code != 0 {
		t.Fatal("quota rm")
	}
	if code, _, errs := c.run("", "exec", "refund", "--user", "7"); code != 0 {
		t.Fatalf("exec after rm: %d %s", code, errs)
	}
}
