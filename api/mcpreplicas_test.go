package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins/openapiquery"
	"github.com/blindexec/blindexec/store"
)

// roundRobin is a plain load balancer in front of replicas: each request
// to the next, no stickiness; it notes which replica served what.
type roundRobin struct {
	backends []*httputil.ReverseProxy
	mu       sync.Mutex
	next     int
	served   []served
}

// served is one request the balancer forwarded: its MCP method, whether
// it carried a requestState, and the replica.
type served struct {
	method  string
	state   bool
	replica int
}

func newRoundRobin(t *testing.T, urls ...string) (*roundRobin, string) {
	rr := &roundRobin{}
	for _, u := range urls {
		target, _ := url.Parse(u)
		p := httputil.NewSingleHostReverseProxy(target)
		p.FlushInterval = -1 // subscriptions/listen streams its events
		rr.backends = append(rr.backends, p)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		rr.mu.Lock()
		i := rr.next % len(rr.backends)
		rr.next++
		rr.served = append(rr.served, served{r.Header.Get("Mcp-Method"), strings.Contains(string(body), `"requestState"`), i})
		rr.mu.Unlock()
		rr.backends[i].ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return rr, srv.URL
}

func (rr *roundRobin) log() []served {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return slices.Clone(rr.served)
}

// TestMCPAnyReplica: two replicas on one database behind a round-robin
// balancer, the go-sdk v1.8 client at 2026-07-28 through it: it lists and
// calls; an approval's retry lands on the other replica than the one
// that sealed its state and is sent once; a catalog change made on one
// replica reaches the client's subscriptions/listen stream held by the
// other, after that replica's next poll.
func TestMCPAnyReplica(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up, a, b := sealingReplicas(t, st)
		envs := []*env{a, b}
		for _, p := range []map[string]any{
			{"name": "delete_repo", "description": "Delete a repository", "execution": map[string]any{"method": "DELETE", "base_url": up.URL + "/repo"},
				"parameters": map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}}},
			{"name": "get_repo", "description": "Read a repository", "execution": map[string]any{"method": "GET", "base_url": up.URL + "/repo"},
				"parameters": map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}}},
		} {
			if code, body := a.do("POST", "/v1/plugins", adminToken, p); code != http.StatusCreated {
				t.Fatalf("create: %d %v", code, body)
			}
		}
		for _, e := range envs {
			if _, err := e.changes.Poll(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		_, tok := a.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "t"})
		rr, lb := newRoundRobin(t, a.url, b.url)

		changed := make(chan struct{}, 4)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
			ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
			}}).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: lb + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(tok["token"].(string))}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" || cs.ID() != "" {
			t.Fatalf("negotiated %s, session %q", v, cs.ID())
		}
		for range 2 { // one list on each replica
			if got := toolNames(t, cs); !slices.Equal(got, []string{"delete_repo", "get_repo"}) {
				t.Fatalf("tools = %v", got)
			}
		}
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get_repo", Arguments: map[string]any{"repo": "x"}})
		if err != nil || res.IsError {
			t.Fatalf("get_repo: %v %+v", err, res)
		}
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "delete_repo", Arguments: map[string]any{"repo": "x"}})
		if err != nil || res.IsError || up.count(http.MethodDelete) != 1 {
			t.Fatalf("delete_repo: %v %+v, %d sent", err, res, up.count(http.MethodDelete))
		}
		log := rr.log()
		var first, retry, listen = -1, -1, -1
		for _, s := range log {
			switch {
			case s.method == "subscriptions/listen":
				listen = s.replica
			case s.method == "tools/call" && s.state:
				retry = s.replica
			case s.method == "tools/call":
				first = s.replica // the last call without a state: delete_repo's
			}
		}
		if first < 0 || retry < 0 || first == retry {
			t.Errorf("the approval's call on replica %d, its retry on %d; want two replicas (%+v)", first, retry, log)
		}
		if listen < 0 {
			t.Fatalf("the client opened no subscriptions/listen: %+v", log)
		}

		// A plugin added on the replica not holding the stream; the other
		// learns of it at its next poll, and tells the client.
		other := envs[1-listen]
		if code, body := other.do("POST", "/v1/plugins", adminToken, map[string]any{"name": "list_repos", "description": "List repositories",
			"execution": map[string]any{"method": "GET", "base_url": up.URL + "/repos"}, "parameters": map[string]any{"type": "object"}}); code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, body)
		}
		if _, err := envs[listen].changes.Poll(t.Context()); err != nil { // the holder's one poll
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatal("no notifications/tools/list_changed on the stream of the other replica")
		}
		if got := toolNames(t, cs); !slices.Contains(got, "list_repos") {
			t.Errorf("tools after the change = %v", got)
		}
	})
}

// toolNames lists cs's tools by name, every page.
func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// TestOpenAPIToolsBothEras: /mcp/openapi serves the go-sdk v1.8 client
// at 2026-07-28 without a session and at 2025-11-25 in one, behind the
// bearer token.
func TestOpenAPIToolsBothEras(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), func(s *api.Server) {
		s.OpenAPITools = openapiquery.Handler(openapiquery.ServerOptions{DefaultSource: "../plugins/openapiquery/testdata/fastapi.json"})
	})
	_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "t"})
	for _, tc := range []struct{ version, want string }{{"", "2026-07-28"}, {"2025-11-25", "2025-11-25"}} {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: e.url + "/mcp/openapi", HTTPClient: &http.Client{Transport: api.Bearer(tok["token"].(string))}},
			&sdk.ClientSessionOptions{ProtocolVersion: tc.version})
		if err != nil {
			t.Fatal(err)
		}
		if v := cs.InitializeResult().ProtocolVersion; v != tc.want {
			t.Errorf("negotiated %s, want %s", v, tc.want)
		}
		if names := toolNames(t, cs); !slices.Contains(names, "search_operations") || !slices.Contains(names, "get_api_info") {
			t.Errorf("%s: tools %v", tc.want, names)
		}
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get_api_info", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Errorf("%s: get_api_info: %v %+v", tc.want, err, res)
		}
		cs.Close()
	}
}

// sealingReplicas is two replicas on st that confirm consequential calls
// and seal MCP request state with one master key, and an upstream
// answering {"ok":true}.
func sealingReplicas(t *testing.T, st *store.Store) (up *upstream, a, b *env) {
	t.Helper()
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
	key, err := mcpserver.StateKey("the master key both replicas are given")
	if err != nil {
		t.Fatal(err)
	}
	replica := func(s *api.Server) {
		s.Confirm = confirm.Consequential
		s.MCP = &api.MCPConfig{StateKey: key}
	}
	return up, newEnv(t, st, replica), newEnv(t, st, replica)
}
