package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestStartURLNeverReachesTheModel is issue 44 point 6 over MCP: a
// client without URL elicitation, whose tool results go to the model, is
// told which account to connect and where a person connects it (the
// console's Connections page, which asks the person to sign in), never a
// start URL — a single-use link that, read by an injected model, could be
// passed to someone who links their own account to this user.
func TestStartURLNeverReachesTheModel(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newConnectEnv(t, st, func(s *api.Server) {
			s.Confirm = confirm.Consequential
			s.MCP = &api.MCPConfig{}
		})
		_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "agent"})
		for _, caps := range []*sdk.ClientCapabilities{nil, {Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}}} {
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "plain", Version: "1"}, &sdk.ClientOptions{Capabilities: caps}).
				Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(tok["token"].(string))}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "acme_me", Arguments: map[string]any{}})
			cs.Close()
			if err != nil || !res.IsError || len(res.Content) != 1 {
				t.Fatalf("a client without URL elicitation (%+v): %+v %v", caps, res, err)
			}
			text := res.Content[0].(*sdk.TextContent).Text
			var te struct {
				Error struct {
					Code      string
					Details   struct{ Provider string }
					ConnectIn string `json:"connect_in"`
				}
			}
			if err := json.Unmarshal([]byte(text), &te); err != nil || te.Error.Code != "connection_required" || te.Error.Details.Provider != "acme" ||
				te.Error.ConnectIn != e.url+"/console/#/connections" {
				t.Errorf("the tool result: %s (%v)", text, err)
			}
			if strings.Contains(text, connections.StartPath) || strings.Contains(text, "connect_at") {
				t.Errorf("the tool result, which the model reads, holds a start URL: %s", text)
			}
		}
		if n := len(e.api.received()); n != 0 {
			t.Errorf("%d requests reached the API", n)
		}
	})
}
