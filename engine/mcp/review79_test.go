package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// TestServerRegisteredAnewJudgedAsCalled (review79): the catalog sends
// GH_TOKEN to the API at github's origin, where server gh is registered;
// gh is deleted and registered again under the same id at another URL
// behind this process's back (another replica, the CLI: the counters not
// yet polled). The rule of where keys go judged the proxy's tool of gh
// by the index's copy of the server (still at github's origin), while the
// call read the row afresh and went to the new URL with the users' key.
// Now the rule judges the row the call reads: refused, nothing sent.
func TestServerRegisteredAnewJudgedAsCalled(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		github, lookalike := mcptest.New(t), mcptest.New(t)
		reposAt(t, st, github.Endpoint)
		bearer := &plugins.AuthConfig{Type: plugins.AuthBearer, Token: "GH_TOKEN"}
		if _, err := mcp.Register(ctx, st, mcp.ServerSpec{ID: "gh", Name: "gh", URL: github.Endpoint, AuthConfig: bearer}, "test"); err != nil {
			t.Fatal(err)
		}
		changes := store.NewWatcher(st, time.Hour, nil) // polled by hand: this process's view
		changes.Poll(ctx)
		cat := auth.NewCatalog(st, catalog.New(st, changes, nil), changes)
		m, ex := ghExecutor(t, st)
		m.Changes, ex.Catalog = changes, cat
		tool := ghTool()
		if _, err := cat.Row(ctx, "repos"); err != nil { // the index read, gh at github's origin
			t.Fatal(err)
		}

		// Another process deletes gh and registers it again at the lookalike.
		if _, err := st.DeleteMCPServer(ctx, "gh", "other"); err != nil {
			t.Fatal(err)
		}
		if _, err := mcp.Register(ctx, st, mcp.ServerSpec{ID: "gh", Name: "gh", URL: lookalike.Endpoint, AuthConfig: bearer}, "other"); err != nil {
			t.Fatal(err)
		}
		res, err := ex.Execute(ctx, engine.Call{Plugin: tool, Arguments: json.RawMessage(`{"text":"hi"}`), UserID: 7})
		if n := len(lookalike.Calls()); n != 0 {
			t.Fatalf("server gh registered anew at %s was called %d times with the user's GH_TOKEN, which the catalog sends to %s", lookalike.Endpoint, n, github.Endpoint)
		}
		if res == nil || res.OK || res.Error == nil || res.Error.Code != engine.CodeCredentialNotBound {
			t.Fatalf("the call: %+v %v, want refused %s", res, err, engine.CodeCredentialNotBound)
		}

		// The server back at github's origin, the proxy's tool goes there.
		changes.Poll(ctx)
		if _, err := st.DeleteMCPServer(ctx, "gh", "other"); err != nil {
			t.Fatal(err)
		}
		if _, err := mcp.Register(ctx, st, mcp.ServerSpec{ID: "gh", Name: "gh", URL: github.Endpoint, AuthConfig: bearer}, "other"); err != nil {
			t.Fatal(err)
		}
		changes.Poll(ctx)
		if res, err := ex.Execute(ctx, engine.Call{Plugin: tool, Arguments: json.RawMessage(`{"text":"hi"}`), UserID: 7}); err != nil || !res.OK {
			t.Fatalf("the call at the catalog's origin: %+v %v", res, err)
		}
		if len(github.Calls()) != 1 || len(lookalike.Calls()) != 0 {
			t.Errorf("github called %d times, the lookalike %d; want 1 and 0", len(github.Calls()), len(lookalike.Calls()))
		}
	})
}

// ghTool is the proxy's tool echo of server gh: no catalog row, reading
// GH_TOKEN.
func ghTool() *plugins.Plugin {
	tool := mcpPlugin("echo", nil)
	tool.Execution.MCPID, tool.RequiredCredentials = "gh", []string{"GH_TOKEN"}
	return tool
}

// reposAt adds the catalog row repos, sending GH_TOKEN to base's origin.
func reposAt(t *testing.T, st *store.Store, base string) {
	t.Helper()
	p, err := plugins.ParseJSON([]byte(`{"name": "repos", "description": "d", "parameters": {"type": "object"},
		"execution": {"method": "GET", "base_url": "` + base + `"}, "auth_config": {"type": "bearer", "token": "GH_TOKEN"}}`))
	if err != nil {
		t.Fatal(err)
	}
	row, err := catalog.RowFromPlugin(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreatePlugin(t.Context(), row); err != nil {
		t.Fatal(err)
	}
}

// TestServerRegisteredAnewAfterTheDecision (review79): the decision
// judged where the proxy's tool of gh sends GH_TOKEN (to github's origin,
// as the catalog's repos does) on gh's row as read then; the server registered anew at another URL and the counters polled
// before the plan is sent, the Manager read the new row at the send and
// the users' key went there, judged nowhere. The send is bound to the row
// judged: refused, nothing sent.
func TestServerRegisteredAnewAfterTheDecision(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		github, lookalike := mcptest.New(t), mcptest.New(t)
		bearer := &plugins.AuthConfig{Type: plugins.AuthBearer, Token: "GH_TOKEN"}
		reposAt(t, st, github.Endpoint)
		if _, err := mcp.Register(ctx, st, mcp.ServerSpec{ID: "gh", Name: "gh", URL: github.Endpoint, AuthConfig: bearer}, "test"); err != nil {
			t.Fatal(err)
		}
		changes := store.NewWatcher(st, time.Hour, nil) // polled by hand
		changes.Poll(ctx)
		m, ex := ghExecutor(t, st)
		m.Changes, ex.Catalog = changes, auth.NewCatalog(st, catalog.New(st, changes, nil), changes)
		tool := ghTool()
		plan, err := ex.Decide(ctx, engine.Call{Plugin: tool, Arguments: json.RawMessage(`{"text":"hi"}`), UserID: 7})
		if err != nil {
			t.Fatalf("the decision at the catalog's origin: %v", err)
		}

		if _, err := st.DeleteMCPServer(ctx, "gh", "other"); err != nil {
			t.Fatal(err)
		}
		if _, err := mcp.Register(ctx, st, mcp.ServerSpec{ID: "gh", Name: "gh", URL: lookalike.Endpoint, AuthConfig: bearer}, "other"); err != nil {
			t.Fatal(err)
		}
		changes.Poll(ctx)
		res, _ := ex.Send(ctx, plan)
		if n := len(lookalike.Calls()); n != 0 {
			t.Fatalf("server gh registered anew at %s after the decision was called %d times with the user's GH_TOKEN", lookalike.Endpoint, n)
		}
		if res == nil || res.OK || res.Error == nil || res.Error.Code != engine.CodeCredentialNotBound {
			t.Fatalf("the send: %+v, want refused %s", res, engine.CodeCredentialNotBound)
		}
	})
}
