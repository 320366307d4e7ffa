package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/internal/mcpts"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPAsksToConnect (issue 34 point 5, over /mcp): a tool whose user
// has no connection is answered at once, nothing sent — a client that
// declared URL elicitation (Go's SDK, the official TypeScript SDK) with
// the specification's URL-elicitation-required error whose url is a
// fresh start URL, any other with a tool error naming the console's
// Connections page and no start URL (issue 44 point 6) — and, once the user followed that URL and confirmed, the same call
// is made with the user's token. Under the default confirmation policy
// too: a GET waits for nobody.
func TestMCPAsksToConnect(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newConnectEnv(t, st, func(s *api.Server) {
			s.Confirm = confirm.Consequential
			s.MCP = &api.MCPConfig{}
		})
		_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "agent"})
		seven := tok["token"].(string)

		uc, err := sdk.NewClient(&sdk.Implementation{Name: "u", Version: "1"}, &sdk.ClientOptions{
			Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}}}).
			Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(seven)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer uc.Close()
		_, err = uc.CallTool(t.Context(), &sdk.CallToolParams{Name: "acme_me", Arguments: map[string]any{}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != sdk.CodeURLElicitationRequired {
			t.Fatalf("a URL-elicitation client: %v", err)
		}
		var data struct {
			Elicitations []struct{ Mode, Message, URL, ElicitationID string }
		}
		if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data.Elicitations) != 1 ||
			data.Elicitations[0].Mode != "url" || !strings.HasPrefix(data.Elicitations[0].URL, e.url+connections.StartPath) ||
			!strings.Contains(data.Elicitations[0].Message, "Connect your acme account") || data.Elicitations[0].ElicitationID == "" {
			t.Fatalf("the elicitation: %s (%v)", rpcErr.Data, err)
		}
		if n := len(e.api.received()); n != 0 {
			t.Fatalf("%d requests reached the API", n)
		}

		t.Run("TypeScript clients", func(t *testing.T) {
			mcpts.Require(t)
			var plain struct {
				Result struct {
					IsError bool
					Content []struct{ Text string }
				}
			}
			out := mcpts.Run(t, time.Minute, nil, "connect_client.mjs", e.url+"/mcp", seven, "acme_me", `{}`, "none")
			if err := json.Unmarshal(out, &plain); err != nil || !plain.Result.IsError || len(plain.Result.Content) != 1 {
				t.Fatalf("connect_client.mjs none printed %s: %v", out, err)
			}
			var te struct {
				Error struct {
					Code, Message string
					Details       struct{ Provider string }
					ConnectIn     string `json:"connect_in"`
				}
			}
			if err := json.Unmarshal([]byte(plain.Result.Content[0].Text), &te); err != nil || te.Error.Code != "connection_required" ||
				te.Error.Details.Provider != "acme" || te.Error.ConnectIn != e.url+"/console/#/connections" ||
				strings.Contains(plain.Result.Content[0].Text, connections.StartPath) {
				t.Fatalf("the tool error: %s (%v)", plain.Result.Content[0].Text, err)
			}
			out = mcpts.Run(t, time.Minute, nil, "connect_client.mjs", e.url+"/mcp", seven, "acme_me", `{}`, "url")
			var elicit struct {
				Error struct {
					Code         int
					Elicitations []struct{ Mode, URL string }
				}
			}
			if err := json.Unmarshal(out, &elicit); err != nil || elicit.Error.Code != -32042 || len(elicit.Error.Elicitations) != 1 ||
				!strings.HasPrefix(elicit.Error.Elicitations[0].URL, e.url+connections.StartPath) {
				t.Fatalf("connect_client.mjs url printed %s: %v", out, err)
			}
			if n := len(e.api.received()); n != 0 {
				t.Fatalf("%d requests reached the API", n)
			}

			// The user follows the URL the client showed, then the client
			// calls again.
			e.as.Browser(t, "account-1").Connect(elicit.Error.Elicitations[0].URL)
			out = mcpts.Run(t, time.Minute, nil, "connect_client.mjs", e.url+"/mcp", seven, "acme_me", `{}`, "url")
			plain.Result.IsError = false
			if err := json.Unmarshal(out, &plain); err != nil || plain.Result.IsError || !strings.Contains(plain.Result.Content[0].Text, `"account":"account-1"`) {
				t.Fatalf("after connecting, connect_client.mjs printed %s: %v", out, err)
			}
			if sent := e.api.received(); len(sent) != 1 || !strings.HasPrefix(sent[0].header.Get("Authorization"), "Bearer ory_at_") {
				t.Errorf("the API received %+v", sent)
			}
		})
	})
}

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
				Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(tok["token"].(string))}}, nil)
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

// TestMCPConnectRoundTrip: a 2026-07-28 client declaring URL elicitation
// is answered input_required with a fresh start URL and a sealed state;
// its elicitation handler has the person connect there, and the client's
// retry, the state with it, makes the call with the user's new account.
func TestMCPConnectRoundTrip(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	key, err := mcpserver.StateKey("a master key of this test")
	if err != nil {
		t.Fatal(err)
	}
	e := newConnectEnv(t, st, func(s *api.Server) {
		s.Confirm = confirm.Consequential
		s.MCP = &api.MCPConfig{StateKey: key}
	})
	_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "agent"})
	var asked []*sdk.ElicitParams
	uc, err := sdk.NewClient(&sdk.Implementation{Name: "u", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked = append(asked, r.Params)
			e.as.Browser(t, "account-1").Connect(r.Params.URL) // the person, at the URL the client showed
			return &sdk.ElicitResult{Action: "accept"}, nil
		}}).
		Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(tok["token"].(string))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	res, err := uc.CallTool(t.Context(), &sdk.CallToolParams{Name: "acme_me", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"account":"account-1"`) {
		t.Fatalf("the call: %v %+v", err, res)
	}
	if len(asked) != 1 || asked[0].Mode != "url" || !strings.HasPrefix(asked[0].URL, e.url+connections.StartPath) ||
		!strings.Contains(asked[0].Message, "Connect your acme account") {
		t.Errorf("asked %+v", asked)
	}
	if sent := e.api.received(); len(sent) != 1 {
		t.Errorf("the API received %d requests", len(sent))
	}
}
