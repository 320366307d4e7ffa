package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/plugins"
)

// tls81: an MCP server whose auth config sends a user's key is not
// reached over http:// (egress_denied before any dial) unless its host is
// loopback or listed; one without keys is. mcp.test resolves to loopback,
// so what was refused would have been reached.
func TestPlaintextServerKeysRefused(t *testing.T) {
	up := mcptest.New(t)
	named := strings.Replace(up.Endpoint, "127.0.0.1", "mcp.test", 1)
	tests := []struct {
		name, url, auth, listed string
		refused                 bool
	}{
		{"keys to a named host", named, `{"type":"bearer","token":"mcp_token"}`, "", true},
		{"keys to a listed host", named, `{"type":"bearer","token":"mcp_token"}`, "mcp.test", false},
		{"keys to loopback", up.Endpoint, `{"type":"bearer","token":"mcp_token"}`, "", false},
		{"no keys to a named host", named, `{"type":"none"}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, dialled := egresstest.NamedClient(t, tt.listed, "mcp.test")
			row := httpServer(up)
			row.URL, row.AuthConfig = tt.url, []byte(tt.auth)
			reg := &servers{}
			reg.add(row)
			m := mcp.NewManager(reg, client)
			t.Cleanup(func() { m.Close() })
			ex := engine.NewExecutor(egresstest.Client(t))
			ex.Register(plugins.TypeMCP, mcp.Invoker{Manager: m})
			p := mcpPlugin("echo", nil)
			if !strings.Contains(tt.auth, "mcp_token") {
				p.RequiredCredentials = nil
			}
			res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{"text":"hi"}`), Credentials: tokenA})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.refused {
				// The SDK's server answers a Host other than loopback's 403
				// (its DNS rebinding guard): reached all the same.
				if !res.OK && (res.Error.Code == engine.CodeEgressDenied || len(dialled()) == 0) {
					t.Fatalf("not sent: %+v", res.Error)
				}
				return
			}
			if res.OK || res.Error.Code != engine.CodeEgressDenied || !strings.Contains(res.Error.Message, "https://") {
				t.Fatalf("%+v, want egress_denied expecting https", res.Error)
			}
			if strings.Contains(res.Error.Message, tokenA["mcp_token"]) {
				t.Fatalf("the refusal shows the key: %s", res.Error.Message)
			}
			if d := dialled(); len(d) > 0 {
				t.Fatalf("dialled %v before refusing", d)
			}
		})
	}
}
