package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// everything is the entry point of the pinned reference server
// @modelcontextprotocol/server-everything (npm ci --prefix tests/mcp-ts).
func everything(t *testing.T) string {
	js, err := filepath.Abs("../../tests/mcp-ts/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(js); err != nil {
		t.Skip("tests/mcp-ts/node_modules is absent: run npm ci --prefix tests/mcp-ts")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	return js
}

// TestServerEverything calls the reference server's tools through the
// invoker, over stdio and over streamable HTTP.
func TestServerEverything(t *testing.T) {
	js := everything(t)
	call := func(t *testing.T, row store.MCPServer, tool, args, want string) {
		t.Helper()
		ex, _ := setup(t, row)
		p := &plugins.Plugin{Name: strings.ReplaceAll(tool, "-", "_"), Description: "x",
			Parameters: json.RawMessage(`{"type":"object","additionalProperties":true}`),
			Execution:  plugins.Execution{Type: plugins.TypeMCP, MCPID: row.ID, ToolName: tool}}
		res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(args)})
		if err != nil || !res.OK || !strings.Contains(string(res.Output), want) {
			t.Fatalf("%s %s = %+v (%v), %v; want output with %q", tool, args, res, res.Error, err, want)
		}
	}

	t.Run("stdio", func(t *testing.T) {
		argv, _ := json.Marshal([]string{"node", js, "stdio"})
		row := store.MCPServer{ID: "srv-1", Name: "everything", Transport: store.TransportStdio, Command: argv}
		call(t, row, "echo", `{"message":"hello over stdio"}`, "hello over stdio")
		call(t, row, "get-sum", `{"a":2,"b":3}`, "5")
	})

	t.Run("streamable_http", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		cmd := exec.Command("node", js, "streamableHttp")
		cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("server-everything did not start listening")
			}
		}
		row := store.MCPServer{ID: "srv-1", Name: "everything", Transport: store.TransportStreamableHTTP, URL: "http://" + addr + "/mcp"}
		call(t, row, "echo", `{"message":"hello over http"}`, "hello over http")
		call(t, row, "get-sum", `{"a":20,"b":22}`, "42")
	})
}
