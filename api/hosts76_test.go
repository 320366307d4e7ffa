package api_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestProxySendsNoKeyElsewhere (hosts76): parity76's fixture case. An MCP
// server registered reading GH_TOKEN, which the catalog's notes_get sends
// to another origin, is sent no user's GH_TOKEN through the proxy's tool
// without a row — neither its tools/list nor its tools/call — with the
// service token or a per-user token: refused by the decision as
// credential_not_bound, naming the key and both origins, never its value,
// and recorded. Once the administrator enables a row of that server's
// tools (deliberately: the import holds them disabled), the key goes there
// and the proxy calls the server.
func TestProxySendsNoKeyElsewhere(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	e, up, userToken, look := lookalikeEnv(t, st)
	if code, out := e.do("POST", "/v1/mcp/servers", adminToken, map[string]any{"mcp_id": "look", "name": "look", "url": look.Endpoint,
		"auth_config": map[string]any{"type": "bearer", "token": "GH_TOKEN"}}); code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, out)
	}
	keySent := func() bool { return sentBearer(look, ghToken) }
	for _, c := range []struct{ who, token, query string }{
		{"the service token", serviceToken, "?user_id=7"},
		{"a per-user token", userToken, ""},
	} {
		code, out := e.do("POST", "/v1/mcp/proxy/look/tools/whoami/call"+c.query, c.token, map[string]any{})
		refusal, _ := out["error"].(map[string]any)
		msg, _ := refusal["message"].(string)
		if code != http.StatusUnprocessableEntity || refusal["code"] != engine.CodeCredentialNotBound {
			t.Errorf("%s: %d %v, want 422 %s", c.who, code, out, engine.CodeCredentialNotBound)
		}
		if !strings.Contains(msg, "GH_TOKEN") || !strings.Contains(msg, auth.Origin(look.Endpoint)) ||
			!strings.Contains(msg, strings.ToLower(up.URL)) || strings.Contains(string(mustJSON(t, out)), ghToken) {
			t.Errorf("%s: the refusal says %q: want the key's name and both origins, never its value", c.who, msg)
		}
		if keySent() || len(look.Calls()) != 0 {
			t.Errorf("%s: the lookalike server was sent GH_TOKEN (tools/list or tools/call: %d calls)", c.who, len(look.Calls()))
		}
	}

	// The administrator registers a row of the server's tools, enabled:
	// its origin is now one the catalog sends GH_TOKEN to.
	if code, out := e.do("POST", "/v1/plugins", adminToken, `{"name":"look_other","description":"d","parameters":{"type":"object"},"execution":{"type":"mcp","mcp_id":"look","tool_name":"other"}}`); code != http.StatusCreated {
		t.Fatalf("add the row: %d %v", code, out)
	}
	if code, out := e.do("POST", "/v1/mcp/proxy/look/tools/whoami/call?user_id=7", serviceToken, map[string]any{}); code != http.StatusOK || len(look.Calls()) != 1 || !keySent() {
		t.Errorf("once a row sends GH_TOKEN there: %d %v, %d calls", code, out, len(look.Calls()))
	}
}

// sentBearer reports whether s was sent token in an Authorization header.
func sentBearer(s *mcptest.Server, token string) bool {
	for _, h := range s.Headers() {
		if strings.Contains(strings.Join(h.Values("Authorization"), " "), token) {
			return true
		}
	}
	return false
}

// lookalikeEnv is decisionEnv with MCP servers (opts applied then), and a
// server (not yet registered) with the tools whoami and other.
func lookalikeEnv(t *testing.T, st *store.Store, opts ...func(*api.Server)) (e *env, up *upstream, userToken string, look *mcptest.Server) {
	e, up, userToken, _, _ = decisionEnv(t, st, append([]func(*api.Server){func(s *api.Server) {
		m := enginemcp.NewManager(st, egresstest.Client(t))
		t.Cleanup(func() { m.Close() })
		enginemcp.Invoker{Manager: m}.RegisterOn(s.Executor)
		s.MCP = &api.MCPConfig{Manager: m}
	}}, opts...)...)
	look = mcptest.New(t)
	for _, name := range []string{"whoami", "other"} {
		look.AddTool(name, "Who the server thinks you are.", `{"type":"object"}`, func(context.Context, map[string]any) *sdk.CallToolResult {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello"}}}
		})
	}
	return e, up, userToken, look
}

// TestProxyServerNotYetPolled (review77): an MCP server reading
// GH_TOKEN, which the catalog's notes_get sends to its API, registered
// by the CLI (a write this process sees at its next poll of the
// counters). The index of where keys go, read before, does not know it;
// the call reads its row afresh. Before, the check skipped a key it could
// not place and the proxy's listing sent the server user 7's GH_TOKEN
// until the poll; now the key is refused (credential_not_bound) while
// catalog plugins read it.
func TestProxyServerNotYetPolled(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	e, _, _, look := lookalikeEnv(t, st)
	// A call of a catalog row: the index is read.
	if code, out := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "notes_get", "user_id": 7, "arguments": map[string]any{"q": "x"}}); code == http.StatusNotFound || code == http.StatusBadRequest {
		t.Fatalf("notes_get: %d %v", code, out)
	}
	url := look.Endpoint
	if err := st.CreateMCPServer(t.Context(), &store.MCPServer{ID: "look", Name: "look", Transport: store.TransportStreamableHTTP, URL: url, CredentialsURL: &url,
		AuthConfig: store.JSON(`{"type":"bearer","token":"GH_TOKEN"}`)}); err != nil {
		t.Fatal(err)
	}
	code, out := e.do("POST", "/v1/mcp/proxy/look/tools/whoami/call?user_id=7", serviceToken, map[string]any{})
	if sentBearer(look, ghToken) {
		t.Fatalf("the server registered by the CLI was sent GH_TOKEN: %d %v", code, out)
	}
	if code != http.StatusUnprocessableEntity || errCode(out) != engine.CodeCredentialNotBound {
		t.Errorf("%d %v, want 422 %s", code, out, engine.CodeCredentialNotBound)
	}
}

// TestProxyTokenURLIsWhereTheClientGoes (review77): an MCP server at an
// origin the catalog sends GH_TOKEN to (an http plugin of that origin),
// whose auth config is oauth2 client credentials with GH_TOKEN as the
// client secret and a token URL elsewhere. Before, the rule placed
// GH_TOKEN at the server's URL and let the proxy's listing through: the
// token URL received user 7's GH_TOKEN. Now the client's keys count at the
// token URL's origin, where no enabled plugin sends GH_TOKEN: refused.
func TestProxyTokenURLIsWhereTheClientGoes(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	e, _, _, look := lookalikeEnv(t, st)
	tokens := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"tok-0123456789abcdef","token_type":"bearer","expires_in":3600}`))
	})
	if code, out := e.do("POST", "/v1/plugins", adminToken, `{"name":"look_api","description":"d","parameters":{"type":"object"},
		"execution":{"method":"GET","base_url":"`+look.Endpoint+`"},"auth_config":{"type":"bearer","token":"GH_TOKEN"}}`); code != http.StatusCreated {
		t.Fatalf("add look_api: %d %v", code, out)
	}
	if code, out := e.do("PUT", "/v1/credentials/7/GH_CLIENT", adminToken, map[string]string{"value": "client-id-0123456789"}); code != http.StatusNoContent {
		t.Fatalf("store: %d %v", code, out)
	}
	if code, out := e.do("POST", "/v1/mcp/servers", adminToken, map[string]any{"mcp_id": "look", "name": "look", "url": look.Endpoint,
		"auth_config": map[string]any{"type": "oauth2", "oauth2": map[string]any{"grant": "client_credentials", "token_url": tokens.URL + "/token",
			"client_id": "GH_CLIENT", "client_secret": "GH_TOKEN"}}}); code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, out)
	}
	code, out := e.do("POST", "/v1/mcp/proxy/look/tools/whoami/call?user_id=7", serviceToken, map[string]any{})
	for _, r := range tokens.received() {
		if strings.Contains(string(r.body)+strings.Join(r.header.Values("Authorization"), " "), ghToken) ||
			strings.Contains(strings.Join(r.header.Values("Authorization"), " "), base64.StdEncoding.EncodeToString([]byte("client-id-0123456789:"+ghToken))) {
			t.Fatalf("the token URL was sent GH_TOKEN: %d %v", code, out)
		}
	}
	if code != http.StatusUnprocessableEntity || errCode(out) != engine.CodeCredentialNotBound {
		t.Errorf("%d %v, want 422 %s", code, out, engine.CodeCredentialNotBound)
	}
}
