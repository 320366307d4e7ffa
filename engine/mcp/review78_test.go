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
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// TestServerIDOverAnotherServersName: a server is found by its id, else
// by its name, an id winning (store.GetMCPServer, the index of where keys
// go). The Manager kept each server read under its id and its name alike,
// so reading server B, named as server A's id, made every later call of
// A's tools (a catalog row's mcp_id, the proxy's /v1/mcp/proxy/<id>) go
// to B's URL with A's users' keys: the decision had placed them at A's.
func TestServerIDOverAnotherServersName(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		github, lookalike := mcptest.New(t), mcptest.New(t)
		bearer := &plugins.AuthConfig{Type: plugins.AuthBearer, Token: "GH_TOKEN"}
		for _, spec := range []mcp.ServerSpec{
			{ID: "gh", Name: "github", URL: github.Endpoint, AuthConfig: bearer},
			{ID: "other", Name: "gh", URL: lookalike.Endpoint, AuthConfig: bearer},
		} {
			if _, err := mcp.Register(ctx, st, spec, "test"); err != nil {
				t.Fatal(err)
			}
		}
		_, ex := ghExecutor(t, st)
		call := func(ref string) {
			p := mcpPlugin("echo", nil)
			p.Execution.MCPID, p.RequiredCredentials = ref, []string{"GH_TOKEN"}
			if res, err := ex.Execute(ctx, engine.Call{Plugin: p, Arguments: json.RawMessage(`{"text":"hi"}`), UserID: 7}); err != nil || !res.OK {
				t.Fatalf("a call of %s: %+v %v", ref, res, err)
			}
		}
		call("other") // the lookalike, by its id
		before := len(lookalike.Calls())
		call("gh") // the GitHub server, by its id
		if n := len(lookalike.Calls()); n != before {
			t.Fatalf("a call of server gh by its id went to the server named gh (%d calls there, %d before)", n, before)
		}
		if len(github.Calls()) != 1 {
			t.Errorf("server gh got %d calls, want 1", len(github.Calls()))
		}
	})
}

// ghExecutor is an executor calling MCP servers through its Manager of
// st, the user's stored GH_TOKEN ghToken.
func ghExecutor(t *testing.T, st *store.Store) (*mcp.Manager, *engine.Executor) {
	m := mcp.NewManager(st, egresstest.Client(t))
	t.Cleanup(func() { m.Close() })
	ex := engine.NewExecutor(egresstest.Client(t))
	ex.Register("mcp", mcp.Invoker{Manager: m})
	ex.Credentials = storedKeys{"GH_TOKEN": ghToken}
	return m, ex
}

const ghToken = "ghp-user-7-0123456789abcdef"

// TestServerURLRefusedWithoutItsPassword (review78): a server's url
// refused was quoted whole in the error, a password in its userinfo with
// it (the API's answer, the CLI's).
func TestServerURLRefusedWithoutItsPassword(t *testing.T) {
	const secret = "pw-Srv5Kq8Zt"
	for _, u := range []string{"https://u:" + secret + "@ho st/mcp", "ftp://u:" + secret + "@host/mcp"} {
		_, err := mcp.ServerSpec{Name: "srv", URL: u}.Row("test")
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("url %s: %v", u, err)
		}
	}
}
