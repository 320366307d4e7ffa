package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// catalog is an in-memory Catalog that never changes.
type catalog []*plugins.Plugin

func (c catalog) EnabledPlugins(context.Context) ([]*plugins.Plugin, error) {
	var out []*plugins.Plugin
	for _, p := range c {
		if p.Enabled() {
			out = append(out, p)
		}
	}
	return out, nil
}

func (c catalog) Version() int64 { return 1 }

// creds is the credential store: user 7 has both secrets.
type creds map[int64]map[string]string

func (c creds) Resolve(_ context.Context, user int64, keys []string) (map[string]string, error) {
	return c[user], nil
}

type registry struct{ row store.MCPServer }

func (r registry) GetMCPServer(_ context.Context, ref string) (*store.MCPServer, error) {
	if ref != r.row.ID {
		return nil, store.ErrNotFound
	}
	c := r.row
	return &c, nil
}
func (registry) UpdateMCPToolsCache(context.Context, string, store.JSON, time.Time) error { return nil }

const (
	httpSecret = "http-secret-0123456789"
	mcpSecret  = "mcp-secret-0123456789"
)

// fixture: an HTTP upstream, an MCP upstream, and a catalog of plugins
// calling them, executed by an engine whose user 7 has credentials.
func fixture(t *testing.T) (catalog, *engine.Executor, *mcptest.Server, *[]http.Header) {
	var seen []http.Header
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Clone())
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"company":"ACME","q":"`+r.URL.Query().Get("q")+`"}`)
	}))
	t.Cleanup(api.Close)
	up := mcptest.New(t)

	m := mcp.NewManager(registry{store.MCPServer{ID: "med", Name: "med", Transport: store.TransportStreamableHTTP, URL: up.Endpoint, CredentialsURL: new(up.Endpoint),
		AuthConfig: store.JSON(`{"type":"bearer","token":"med_token"}`)}}, egresstest.Client(t))
	t.Cleanup(func() { m.Close() })
	ex := engine.NewExecutor(egresstest.Client(t))
	ex.Register(plugins.TypeMCP, mcp.Invoker{Manager: m})
	ex.Credentials = creds{7: {"api_key": httpSecret, "med_token": mcpSecret}}

	cat := catalog{
		{Name: "company_search", Description: "Searches companies.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
			Execution:  plugins.Execution{Method: "GET", BaseURL: api.URL + "/search"},
			AuthConfig: plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{{Source: "api_key", Target: "X-Api-Key"}}}},
		{Name: "generate_disease_treatment_plan", Description: "Treatment plan.",
			Parameters:          json.RawMessage(`{"type":"object","properties":{"disease_id":{"type":"string"},"include_drugs":{"type":"string"},"patient_age":{"type":"integer"}},"required":["disease_id","patient_age"]}`),
			Execution:           plugins.Execution{Type: plugins.TypeMCP, MCPID: "med", ToolName: "generate_disease_treatment_plan"},
			RequiredCredentials: []string{"med_token"},
			FixedParams:         map[string]any{"disease_id": "disease_000001", "include_drugs": "true"}},
		{Name: "fail", Description: "Fails.", Parameters: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}}}`),
			Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: "med", ToolName: "fail"}, RequiredCredentials: []string{"med_token"}},
		{Name: "off", Description: "Disabled.", Parameters: json.RawMessage(`{"type":"object"}`), Status: plugins.StatusDisabled,
			Execution: plugins.Execution{Method: "GET", BaseURL: api.URL}},
	}
	return cat, ex, up, &seen
}

// TestCatalogOverStreamableHTTP drives /mcp with the go-sdk client.
func TestCatalogOverStreamableHTTP(t *testing.T) {
	cat, ex, up, seen := fixture(t)
	authn := func(r *http.Request) (mcpserver.Identity, error) {
		if r.Header.Get("Authorization") != "Bearer user-7-token" {
			return mcpserver.Identity{}, errors.New("token needed")
		}
		return mcpserver.Identity{User: 7, Principal: "t7"}, nil
	}
	srv := httptest.NewServer(mcpserver.NewService(cat, ex, mcpserver.Options{}).Handler(authn))
	defer srv.Close()

	// Without the token: 401.
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}

	hc := &http.Client{Transport: bearer{"user-7-token"}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	check(t, cs, up, seen)
}

// TestCatalogInMemory drives NewServer over in-memory transports, as
// `mcp serve --stdio` serves it.
func TestCatalogInMemory(t *testing.T) {
	cat, ex, up, seen := fixture(t)
	check(t, inMemory(t, mcpserver.NewService(cat, ex, mcpserver.Options{})), up, seen)
}

// inMemory connects a client to one of svc's servers, for user 7, over
// in-memory transports, as `mcp serve --stdio` serves it.
func inMemory(t *testing.T, svc *mcpserver.Service) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	go svc.NewServer(7).Run(t.Context(), st)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func check(t *testing.T, cs *sdk.ClientSession, up *mcptest.Server, seen *[]http.Header) {
	t.Helper()
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"company_search", "fail", "generate_disease_treatment_plan"}) {
		t.Errorf("tools = %v, want the enabled plugins", names)
	}
	// Annotations (issue 33): the GET is read-only and idempotent, the
	// MCP tools without annotations are consequential, so destructive;
	// every call reaches outside the engine.
	for _, tl := range list.Tools {
		a := tl.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil || !*a.OpenWorldHint {
			t.Errorf("%s: annotations %+v, want all four", tl.Name, a)
			continue
		}
		readOnly := tl.Name == "company_search"
		if a.ReadOnlyHint != readOnly || *a.DestructiveHint == readOnly || a.IdempotentHint != readOnly {
			t.Errorf("%s: readOnly %v destructive %v idempotent %v, want read-only %v", tl.Name, a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, readOnly)
		}
	}
	wire, _ := json.Marshal(list)
	for _, hidden := range []string{"disease_id", "include_drugs", "base_url", "mcp_id", "api_key", "X-Api-Key", "med_token", httpSecret, mcpSecret, "127.0.0.1"} {
		if strings.Contains(string(wire), hidden) {
			t.Errorf("tools/list shows %q: %s", hidden, wire)
		}
	}

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "company_search", Arguments: map[string]any{"q": "acme"}})
	if err != nil || res.IsError {
		t.Fatalf("company_search: %+v, %v", res, err)
	}
	if txt := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(txt, `"company":"ACME"`) {
		t.Errorf("company_search text = %s", txt)
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc["q"] != "acme" {
		t.Errorf("company_search structuredContent = %v", res.StructuredContent)
	}
	if h := (*seen)[len(*seen)-1]; h.Get("X-Api-Key") != httpSecret {
		t.Errorf("the HTTP upstream got %v, want user 7's key", h)
	}

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "generate_disease_treatment_plan", Arguments: map[string]any{"patient_age": 45}})
	if err != nil || res.IsError {
		t.Fatalf("treatment plan: %+v, %v", res.Content[0], err)
	}
	calls := up.Calls()
	last := calls[len(calls)-1]
	if last.Arguments["disease_id"] != "disease_000001" || last.Arguments["patient_age"] != float64(45) || last.Header.Get("Authorization") != "Bearer "+mcpSecret {
		t.Errorf("the MCP upstream got %v %v", last.Arguments, last.Header)
	}

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "fail", Arguments: map[string]any{"reason": "nope"}})
	// The upstream's own error result, whole (issue 48 point 1).
	if err != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "failed: nope" {
		t.Errorf("fail: %+v, %v; want the upstream's isError result", res, err)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "company_search", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "invalid_arguments") {
		t.Errorf("missing argument: %+v, %v; want isError invalid_arguments", res, err)
	}
	if _, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "off"}); err == nil {
		t.Error("a disabled plugin was callable")
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
