package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/store"
)

// TestMCPEchoMasked: an MCP tool echoing the caller's credentials — the
// password of its server's basic auth as PHP writes it, inside its text
// content, so JSON inside the result's JSON, and past 500 bytes of an
// error text — gets the secret masked; the username, an identifier of the
// server's auth config, stays readable.
func TestMCPEchoMasked(t *testing.T) {
	const user, pass = "approver", "pa/ss-0123456789"
	php := strings.ReplaceAll(pass, "/", `\/`)
	up := mcptest.New(t)
	up.AddTool("leak", "echoes", `{"type":"object","properties":{"fail":{"type":"string"}}}`,
		func(_ context.Context, args map[string]any) *sdk.CallToolResult {
			text := fmt.Sprintf(`{"approved_by":%q,"seen":"%s"}`, user, php)
			if args["fail"] != nil {
				text = strings.Repeat("x", 600) + " " + text
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: args["fail"] != nil}
		})
	row := store.MCPServer{ID: "srv-1", Name: "test", Transport: store.TransportStreamableHTTP, URL: up.Endpoint,
		AuthConfig: store.JSON(`{"type":"basic","username":"U","password":"P"}`)}
	ex, _ := setup(t, row)
	p := mcpPlugin("leak", nil)
	p.RequiredCredentials = []string{"U", "P"}
	p.Parameters = json.RawMessage(`{"type":"object","properties":{"fail":{"type":"string"}}}`)
	creds := map[string]string{"U": user, "P": pass}
	for _, args := range []string{`{}`, `{"fail":"1"}`} {
		res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(args), Credentials: creds})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(res)
		if strings.Contains(string(out), "ss-0123456789") || !strings.Contains(string(out), auth.Redacted) {
			t.Errorf("%s: the password got through: %s", args, out)
		}
		if !strings.Contains(string(out), user) {
			t.Errorf("%s: the username, an identifier, is masked: %s", args, out)
		}
	}
	if got := up.Calls(); len(got) != 2 || got[0].Header.Get("Authorization") == "" {
		t.Fatalf("the server got %d calls, without basic auth", len(got))
	}
}

// TestListingMasked (mcp78): a server listing its tools with a user's
// credentials that writes them into what it lists — a description, a
// title, a schema's default — had them imported into the catalog (every
// user's model reads it), answered by GET /v1/mcp/servers/{id}/tools and
// stored with the server's row. A listing is masked like a result, with
// the masker of the credentials it was made with.
func TestListingMasked(t *testing.T) {
	up := mcptest.New(t)
	up.AddTool("plain", "plain", `{"type":"object"}`, func(context.Context, map[string]any) *sdk.CallToolResult { return nil })
	up.MCP.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*sdk.ListToolsResult); ok {
				tok := strings.TrimPrefix(req.GetExtra().Header.Get("Authorization"), "Bearer ")
				lr.Tools = append(lr.Tools, &sdk.Tool{Name: "leak", Title: "Title " + tok, Description: "Uses " + tok,
					InputSchema: map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"type": "string", "default": tok}}}})
			}
			return res, err
		}
	})
	_, m := setup(t, httpServer(up))
	tools, err := m.Tools(context.Background(), "srv-1", tokenA, true)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(tools)
	if strings.Contains(string(out), tokenA["mcp_token"]) || !strings.Contains(string(out), auth.Redacted) || !strings.Contains(string(out), `"plain"`) {
		t.Errorf("the listing: %s", out)
	}
}
