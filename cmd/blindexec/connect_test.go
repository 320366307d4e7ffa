package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/internal/mcpts"
	"github.com/blindexec/blindexec/store"
)

// TestStdioAsksToConnect (issue 34 point 5, `mcp serve --stdio`): a tool
// whose user has no connection answers a client with URL elicitation the
// URL-elicitation-required error with a start URL under
// BLINDEXEC_BROWSER_URL, and any other client (Go's SDK, the official
// TypeScript SDK) a tool error naming the console's Connections page,
// never the start URL its model would read (issue 44 point 6); nothing
// is sent.
func TestStdioAsksToConnect(t *testing.T) {
	c := newCLI(t)
	t.Setenv("BLINDEXEC_BROWSER_URL", "https://engine.example")
	ctx := context.Background()
	st, err := store.Open(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := auth.ParseKeyring(os.Getenv("BLINDEXEC_MASTER_KEY"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connections.New(st, kr, nil, "").PutProvider(ctx, connections.Provider{Name: "acme", AuthorizationURL: "https://id.example/authorize",
		TokenURL: "https://id.example/token", ClientID: "engine", ClientSecret: "client-secret-0123456789", PKCE: true, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	plugin := filepath.Join(t.TempDir(), "acme_me.json")
	os.WriteFile(plugin, []byte(`{"name": "acme_me", "description": "who am I at acme", "parameters": {"type": "object", "properties": {}},
		"execution": {"method": "GET", "base_url": "http://127.0.0.1:9/me"},
		"auth_config": {"type": "oauth2", "oauth2": {"grant": "authorization_code", "provider": "acme", "scopes": ["read"]}}}`), 0o600)
	if code, _, errs := c.run("", "plugin", "add", plugin); code != 0 {
		t.Fatalf("plugin add: %s", errs)
	}
	env := []string{"BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=7", "BLINDEXEC_LOG_LEVEL=error"}
	connect := func(opts *sdk.ClientOptions, version string) (*sdk.CallToolResult, error) {
		cmd := exec.Command(os.Args[0], "--db", c.db, "mcp", "serve", "--stdio")
		cmd.Env = append(os.Environ(), env...)
		sess, err := sdk.NewClient(&sdk.Implementation{Name: "cli-test", Version: "1"}, opts).
			Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		return sess.CallTool(ctx, &sdk.CallToolParams{Name: "acme_me", Arguments: map[string]any{}})
	}
	start := "https://engine.example" + connections.StartPath
	console := `"connect_in":"https://engine.example/console/#/connections"`

	res, err := connect(nil, "")
	if err != nil || !res.IsError {
		t.Fatalf("a client without URL elicitation: %v %+v", err, res)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, `"code":"connection_required"`) || !strings.Contains(text, console) || strings.Contains(text, start) {
		t.Errorf("the tool error: %s", text)
	}
	urlOnly := &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}}
	_, err = connect(&sdk.ClientOptions{Capabilities: urlOnly}, "2025-11-25")
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != sdk.CodeURLElicitationRequired || !strings.Contains(string(rpcErr.Data), `"url":"`+start) {
		t.Errorf("a URL-elicitation client of 2025-11-25: %v", err)
	}
	// 2026-07-28: input_required with the start URL; the person declines,
	// and the client's retry reads the tool error.
	var asked []string
	res, err = connect(&sdk.ClientOptions{Capabilities: urlOnly, ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, r.Params.URL)
		return &sdk.ElicitResult{Action: "decline"}, nil
	}}, "")
	if err != nil || !res.IsError || len(asked) != 1 || !strings.HasPrefix(asked[0], start) ||
		!strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"code":"connection_required"`) {
		t.Errorf("a URL-elicitation client of 2026-07-28: %v %+v, asked %v", err, res, asked)
	}

	t.Run("TypeScript client", func(t *testing.T) {
		mcpts.Require(t)
		out := mcpts.Run(t, time.Minute, env, "client.mjs", "stdio", "acme_me", `{}`, os.Args[0], "--db", c.db, "mcp", "serve", "--stdio")
		var got struct {
			Result struct {
				IsError bool
				Content []struct{ Text string }
			}
		}
		if err := json.Unmarshal(out, &got); err != nil || !got.Result.IsError || !strings.Contains(got.Result.Content[0].Text, console) || strings.Contains(got.Result.Content[0].Text, start) {
			t.Errorf("client.mjs printed %s: %v", out, err)
		}
	})
}
