package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
)

// liveCatalog is a Catalog whose plugins and version a test changes.
type liveCatalog struct {
	mu      sync.Mutex
	ps      []*plugins.Plugin
	version int64
}

func (c *liveCatalog) EnabledPlugins(context.Context) ([]*plugins.Plugin, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ps), nil
}

func (c *liveCatalog) Version() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

func (c *liveCatalog) set(ps []*plugins.Plugin) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ps = ps
	c.version++
}

// builds counts the indexes built: one per build of a searched tool set.
type builds struct {
	mu sync.Mutex
	n  int
}

func (b *builds) index(ps []*plugins.Plugin) (toolset.Searcher, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	return nameIndex(ps), nil
}

func (b *builds) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// nameIndex finds the tools whose name contains the query, in catalog
// order: the tests check what the server does with matches, not ranking.
type nameIndex []*plugins.Plugin

func (ix nameIndex) Search(q string, limit int) []toolsearch.Result {
	var out []toolsearch.Result
	for _, p := range ix {
		if strings.Contains(p.Name, q) && len(out) < limit {
			out = append(out, toolsearch.Result{Name: p.Name, Score: 1, Plugin: p})
		}
	}
	return out
}

// echoTools are GET tools on up answering {"tool": name, "q": q}.
func echoTools(up string, names ...string) []*plugins.Plugin {
	var ps []*plugins.Plugin
	for _, n := range names {
		ps = append(ps, &plugins.Plugin{Name: n, Description: "Echoes " + n + ".",
			Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
			Execution:  plugins.Execution{Method: "GET", BaseURL: up + "/" + n}})
	}
	return ps
}

func echoUpstream(t testing.TB) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"tool":%q,"q":%q}`, strings.TrimPrefix(r.URL.Path, "/"), r.URL.Query().Get("q"))
	}))
	t.Cleanup(up.Close)
	return up
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func callText(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res.Content[0].(*sdk.TextContent).Text, res.IsError
}

// TestToolSearchOverMCP: past the threshold a session lists the
// meta-tools and the pinned tool; a search adds what it found, notifies
// the client and keeps within the threshold; call_tool and direct calls
// reach any catalog tool; a catalog change rebuilds the shared set.
// sessionEra makes a go-sdk client speak the newest protocol of sessions
// (it speaks 2026-07-28 by default, where a server remembers nothing
// between requests).
var sessionEra = &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

func TestToolSearchOverMCP(t *testing.T) {
	up := echoUpstream(t)
	cat := &liveCatalog{ps: echoTools(up.URL, "pin", "repo_a", "repo_b", "repo_c", "team_d"), version: 1}
	ex := engine.NewExecutor(egresstest.Client(t))
	var b builds
	svc := mcpserver.NewService(cat, ex, mcpserver.Options{
		Search:   toolset.Config{Threshold: 3, Pinned: []string{"pin", "gone"}, MaxQueryChars: 50},
		NewIndex: b.index,
	})
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.NewServer(7).Run(ctx, st)
	changed := make(chan struct{}, 10)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, ct, sessionEra)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("capabilities = %+v, want tools.listChanged", caps)
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"search_tools", "call_tool", "pin"}) {
		t.Fatalf("tools = %v", got)
	}

	txt, isErr := callText(t, cs, "search_tools", map[string]any{"query": "repo"})
	var ans struct{ Tools []toolset.Match }
	if err := json.Unmarshal([]byte(txt), &ans); isErr || err != nil || len(ans.Tools) != 3 || ans.Tools[0].Name != "repo_a" || !slices.Equal(ans.Tools[0].Parameters, []string{"q"}) {
		t.Fatalf("search = %s (%v)", txt, err)
	}
	wait := func() {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no notifications/tools/list_changed")
		}
	}
	wait()
	// Three found, room for two beside the pin: the best two.
	if got := toolNames(t, cs); !slices.Equal(got, []string{"search_tools", "call_tool", "pin", "repo_a", "repo_b"}) {
		t.Errorf("tools after the search = %v", got)
	}
	if txt, isErr = callText(t, cs, "repo_a", map[string]any{"q": "x"}); isErr || !strings.Contains(txt, `"tool":"repo_a"`) {
		t.Errorf("repo_a = %s", txt)
	}
	// repo_a was just used: a new find drops repo_b.
	callText(t, cs, "search_tools", map[string]any{"query": "team"})
	wait()
	if got := toolNames(t, cs); !slices.Equal(got, []string{"search_tools", "call_tool", "pin", "repo_a", "team_d"}) {
		t.Errorf("tools after the second search = %v", got)
	}
	// Any catalog tool through call_tool, or directly by name.
	if txt, isErr = callText(t, cs, "call_tool", map[string]any{"name": "repo_c", "arguments": map[string]any{"q": "y"}}); isErr || !strings.Contains(txt, `"tool":"repo_c","q":"y"`) {
		t.Errorf("call_tool repo_c = %s", txt)
	}
	if txt, isErr = callText(t, cs, "repo_b", nil); isErr || !strings.Contains(txt, `"tool":"repo_b"`) {
		t.Errorf("repo_b unlisted = %s", txt)
	}
	for _, bad := range []map[string]any{{"name": "nope"}, {"arguments": map[string]any{}}} {
		if txt, isErr = callText(t, cs, "call_tool", bad); !isErr {
			t.Errorf("call_tool %v = %s, want an error", bad, txt)
		}
	}
	if txt, isErr = callText(t, cs, "search_tools", map[string]any{"limit": 2}); !isErr || !strings.Contains(txt, "query is required") {
		t.Errorf("search without a query = %s", txt)
	}
	// Issue 30: a query over the limit is refused, the limit named.
	if txt, isErr = callText(t, cs, "search_tools", map[string]any{"query": strings.Repeat("repo ", 11)}); !isErr || !strings.Contains(txt, "limit of 50 characters (BLINDEXEC_MAX_QUERY_CHARS)") {
		t.Errorf("search over the query limit = %s", txt)
	}

	// A catalog change: repo_a disabled, a tool added. The set is rebuilt
	// once, and the finds that left the catalog leave the list.
	ps := echoTools(up.URL, "pin", "repo_a", "repo_b", "repo_c", "team_d", "team_e")
	ps[1].Status = plugins.StatusDisabled
	cat.set(ps)
	before := b.count()
	if got := toolNames(t, cs); !slices.Equal(got, []string{"search_tools", "call_tool", "pin", "team_d"}) {
		t.Errorf("tools after the catalog change = %v", got)
	}
	toolNames(t, cs)
	if b.count() != before+1 {
		t.Errorf("the tool set was built %d times for one version", b.count()-before)
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "repo_a"}); err == nil {
		t.Error("a disabled tool was callable")
	}
}

// TestSessionsAreBound: an HTTP session answers only the token and user
// that opened it.
func TestSessionsAreBound(t *testing.T) {
	cat, ex, _, _ := fixture(t)
	// "Bearer <token>" with X-User-Id: the service token may act for any
	// user, a user token only for its own.
	authn := func(r *http.Request) (mcpserver.Identity, error) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var user int64
		fmt.Sscan(r.Header.Get("X-User-Id"), &user)
		switch tok {
		case "service":
			return mcpserver.Identity{User: user, Principal: tok}, nil
		case "user-7", "other-7":
			return mcpserver.Identity{User: 7, Principal: tok}, nil
		}
		return mcpserver.Identity{}, errors.New("unknown token")
	}
	srv := httptest.NewServer(mcpserver.NewService(cat, ex, mcpserver.Options{}).Handler(authn))
	t.Cleanup(srv.Close) // after the sessions' cleanups: Close waits for their streams

	open := func(tok, user string) *sdk.ClientSession {
		hc := &http.Client{Transport: headers{"Authorization": "Bearer " + tok, "X-User-Id": user}}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
			Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, sessionEra)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	// A request of session id with the given credentials: its status.
	post := func(id, tok, user string) int {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("X-User-Id", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	user := open("user-7", "")
	svc := open("service", "7")
	for _, tc := range []struct {
		name, id, tok, user string
		want                int
	}{
		{"the opener", user.ID(), "user-7", "", http.StatusOK},
		{"another token of the same user", user.ID(), "other-7", "", http.StatusForbidden},
		{"the service token", user.ID(), "service", "7", http.StatusForbidden},
		{"the service token, its user", svc.ID(), "service", "7", http.StatusOK},
		{"the service token naming another user", svc.ID(), "service", "8", http.StatusForbidden},
		{"no token", svc.ID(), "nope", "7", http.StatusUnauthorized},
		{"an unknown session", "nope", "user-7", "", http.StatusNotFound},
	} {
		if got := post(tc.id, tc.tok, tc.user); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// The sessions still work for their owners.
	if got := toolNames(t, user); len(got) != 3 {
		t.Errorf("tools = %v", got)
	}
}

type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		if v != "" {
			r.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestSharedToolSet: sessions share one build of the catalog per version.
func TestSharedToolSet(t *testing.T) {
	up := echoUpstream(t)
	cat := &liveCatalog{ps: echoTools(up.URL, "a", "b"), version: 1}
	var b builds
	svc := mcpserver.NewService(cat, engine.NewExecutor(egresstest.Client(t)), mcpserver.Options{
		Search: toolset.Config{Mode: toolset.ModeAlways}, NewIndex: b.index})
	for range 3 {
		ct, st := sdk.NewInMemoryTransports()
		go svc.NewServer(7).Run(t.Context(), st)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := toolNames(t, cs); !slices.Equal(got, []string{"search_tools", "call_tool"}) {
			t.Errorf("tools = %v", got)
		}
		cs.Close()
	}
	if b.count() != 1 {
		t.Errorf("three sessions built the tool set %d times", b.count())
	}
}

// TestCloseEndsStreams: Close ends the sessions' GET streams, so that the
// HTTP server can shut down without waiting for its deadline.
func TestCloseEndsStreams(t *testing.T) {
	cat, ex, _, _ := fixture(t)
	svc := mcpserver.NewService(cat, ex, mcpserver.Options{})
	h := svc.Handler(func(*http.Request) (mcpserver.Identity, error) {
		return mcpserver.Identity{User: 7, Principal: "t"}, nil
	})
	var streams atomic.Int32 // GET requests in flight
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			streams.Add(1)
			defer streams.Add(-1)
		}
		h.ServeHTTP(w, r)
	}))
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: headers{"Authorization": "Bearer x"}}}, sessionEra)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := 0; streams.Load() == 0; i++ { // the client opens its stream after initializing
		if i == 1000 {
			t.Fatal("the client opened no GET stream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	svc.Close()
	closed := make(chan struct{})
	go func() {
		srv.Close() // waits for the requests in flight
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the server still waits for the session's stream")
	}
}

// TestListPages: with search off, a catalog longer than a page is listed
// in pages.
func TestListPages(t *testing.T) {
	names := make([]string, 1500)
	for i := range names {
		names[i] = fmt.Sprintf("t%04d", i)
	}
	cat := &liveCatalog{ps: echoTools("http://127.0.0.1:9", names...), version: 1}
	svc := mcpserver.NewService(cat, engine.NewExecutor(egresstest.Client(t)), mcpserver.Options{Search: toolset.Config{Mode: toolset.ModeOff}})
	cs := inMemory(t, svc)
	first, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(first.Tools) != 1000 || first.NextCursor == "" {
		t.Fatalf("first page: %d tools, cursor %q, %v", len(first.Tools), first.NextCursor, err)
	}
	var all []string
	for tl, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, tl.Name)
	}
	if !slices.Equal(all, names) {
		t.Errorf("all pages: %d tools", len(all))
	}
	if _, err := cs.ListTools(t.Context(), &sdk.ListToolsParams{Cursor: "nope"}); err == nil {
		t.Error("an invalid cursor was accepted")
	}
}
