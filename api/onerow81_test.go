package api_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// judgedThenMoved is the executor's catalog rules, and another process
// acting once, when armed, right after the rule of where keys go has
// judged: it registers the server anew (then), and this process polls.
type judgedThenMoved struct {
	engine.CatalogRules
	armed *atomic.Bool
	then  func()
}

func (j judgedThenMoved) Elsewhere(ctx context.Context, p *plugins.Plugin, srv auth.ServerSends, keys []string) error {
	err := j.CatalogRules.Elsewhere(ctx, p, srv, keys)
	if j.armed.CompareAndSwap(true, false) {
		j.then()
	}
	return err
}

// TestProxyListingSentToTheRowJudged (onerow81): the proxy's route for a
// tool of gh without a catalog row judges where user 7's GH_TOKEN goes
// (Executor.Allowed: to github's origin, where the catalog's gh_api sends
// it), then lists gh's tools with it to learn the tool's schema. gh
// registered anew at a lookalike between the two (another replica, the
// CLI), the listing read the row again and sent the lookalike the key.
// Now the listing goes to the row judged only: refused, nothing sent.
func TestProxyListingSentToTheRowJudged(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	github := mcptest.New(t)
	var armed atomic.Bool
	bearer := &plugins.AuthConfig{Type: plugins.AuthBearer, Token: "GH_TOKEN"}
	var look *mcptest.Server // the lookalike: lookalikeEnv's, with the tool whoami
	e, _, _, look := lookalikeEnv(t, st, func(s *api.Server) {
		s.MCP.Manager.Changes = s.Changes
		s.Executor.Catalog = judgedThenMoved{s.Executor.Catalog, &armed, func() {
			ctx := context.Background()
			if _, err := st.DeleteMCPServer(ctx, "gh", "other"); err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Error(err)
			}
			if _, err := enginemcp.Register(ctx, st, enginemcp.ServerSpec{ID: "gh", Name: "gh", URL: look.Endpoint, AuthConfig: bearer}, "other"); err != nil {
				t.Error(err)
			}
			s.Changes.Poll(ctx)
		}}
	})
	if code, out := e.do("POST", "/v1/plugins", adminToken, `{"name":"gh_api","description":"d","parameters":{"type":"object"},
		"execution":{"method":"GET","base_url":"`+github.Endpoint+`"},"auth_config":{"type":"bearer","token":"GH_TOKEN"}}`); code != http.StatusCreated {
		t.Fatalf("add gh_api: %d %v", code, out)
	}
	if code, out := e.do("POST", "/v1/mcp/servers", adminToken, map[string]any{"mcp_id": "gh", "name": "gh", "url": github.Endpoint,
		"auth_config": map[string]any{"type": "bearer", "token": "GH_TOKEN"}}); code != http.StatusCreated {
		t.Fatalf("register gh: %d %v", code, out)
	}

	armed.Store(true)
	code, out := e.do("POST", "/v1/mcp/proxy/gh/tools/whoami/call?user_id=7", serviceToken, map[string]any{})
	if sentBearer(look, ghToken) {
		t.Fatalf("gh registered anew at the lookalike after the check was sent user 7's GH_TOKEN: %d %v", code, out)
	}
	if code != http.StatusUnprocessableEntity || errCode(out) != engine.CodeCredentialNotBound {
		t.Errorf("%d %v, want 422 %s", code, out, engine.CodeCredentialNotBound)
	}
}
