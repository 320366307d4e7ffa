package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioFollowsAnotherProcess (review 71): `mcp serve --stdio` decides
// each call on the catalog as another process left it after one poll:
// a tool the CLI disables, or replaces by another of its name, while the
// person reads the elicitation is not sent on their yes; a tool removed
// between calls is not sent either.
func TestStdioFollowsAnotherProcess(t *testing.T) {
	up, sent := countingUpstream(t)
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "pay.json")
	doc := fmt.Sprintf(`{"name":"pay","description":"d","parameters":{"type":"object"},"execution":{"method":"POST","base_url":"%s/pay"}}`, up.URL)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "pay2.json")
	if err := os.WriteFile(other, []byte(strings.Replace(doc, "/pay", "/elsewhere", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	add := func(file string) {
		if code, _, errs := c.run("", "plugin", "add", file); code != 0 {
			t.Errorf("plugin add: %s", errs)
		}
	}
	add(file)
	const poll = 50 * time.Millisecond
	var during func()
	cmd := exec.Command(os.Args[0], "--db", c.db, "mcp", "serve", "--stdio")
	cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=7", "BLINDEXEC_CONFIRM=always",
		fmt.Sprintf("BLINDEXEC_CHANGE_POLL_MS=%d", poll.Milliseconds()))
	client := sdk.NewClient(&sdk.Implementation{Name: "cli-test", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			during()
			time.Sleep(6 * poll)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
		}})
	sess, err := client.Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	call := func() (*sdk.CallToolResult, error) {
		return sess.CallTool(t.Context(), &sdk.CallToolParams{Name: "pay", Arguments: map[string]any{}})
	}
	// The person says yes, nothing changed: sent.
	during = func() {}
	if res, err := call(); err != nil || res.IsError || sent.Load() != 1 {
		t.Fatalf("pay approved: %v %+v, %d sent; want sent once", err, res, sent.Load())
	}
	for _, tt := range []struct {
		name   string
		during func()
	}{
		{"disabled while the person read", func() { c.run("", "plugin", "disable", "pay") }},
		{"replaced by another under its name while the person read", func() { c.run("", "plugin", "rm", "pay"); add(other) }},
	} {
		during = tt.during
		res, err := call()
		if err == nil && !res.IsError || sent.Load() != 1 {
			t.Errorf("%s: %v %+v, %d sent; want refused, nothing sent", tt.name, err, res, sent.Load())
		}
		c.run("", "plugin", "enable", "pay")
		time.Sleep(6 * poll)
	}
	// Removed between calls: not sent.
	c.run("", "plugin", "rm", "pay")
	time.Sleep(6 * poll)
	during = func() {}
	if res, err := call(); err == nil && !res.IsError || sent.Load() != 1 {
		t.Errorf("removed: %v %+v, %d sent; want refused, nothing sent", err, res, sent.Load())
	}
}
