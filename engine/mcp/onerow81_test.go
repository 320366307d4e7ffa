package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// judgedThenMoved is the catalog's rules, and another process acting
// right after the rule of where keys go has judged a call: it registers
// the server anew (then) and this process polls the counters, so that the
// next read of the row within the same decision sees it.
type judgedThenMoved struct {
	*auth.Catalog
	then func()
}

func (j judgedThenMoved) Elsewhere(ctx context.Context, p *plugins.Plugin, srv auth.ServerSends, keys []string) error {
	err := j.Catalog.Elsewhere(ctx, p, srv, keys)
	j.then()
	return err
}

// TestOneDecisionReadsTheServerOnce (onerow81): the rule of where keys go
// judged the proxy's tool of gh on gh's row at github's origin; the
// preview read the row again and the approval bound the row read then,
// judged nowhere. Another process registering gh anew at a lookalike
// each time the rule has judged (and putting it back in between) had the
// approved call sent there with the user's GH_TOKEN. Now the decision
// reads the row once: the approval binds the row judged, and the send,
// finding another, is refused.
func TestOneDecisionReadsTheServerOnce(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		github, lookalike := mcptest.New(t), mcptest.New(t)
		bearer := &plugins.AuthConfig{Type: plugins.AuthBearer, Token: "GH_TOKEN"}
		reposAt(t, st, github.Endpoint)
		changes := store.NewWatcher(st, time.Hour, nil) // polled by hand
		registerAt := func(url string) {
			t.Helper()
			if _, err := st.DeleteMCPServer(ctx, "gh", "other"); err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatal(err)
			}
			if _, err := mcp.Register(ctx, st, mcp.ServerSpec{ID: "gh", Name: "gh", URL: url, AuthConfig: bearer}, "other"); err != nil {
				t.Fatal(err)
			}
			changes.Poll(ctx)
		}
		registerAt(github.Endpoint)
		m, ex := ghExecutor(t, st)
		m.Changes = changes
		ex.Catalog = judgedThenMoved{auth.NewCatalog(st, catalog.New(st, changes, nil), changes), func() { registerAt(lookalike.Endpoint) }}
		plan, err := ex.Decide(ctx, engine.Call{Plugin: ghTool(), Arguments: json.RawMessage(`{"text":"hi"}`), UserID: 7, Policy: confirm.Always})
		if err != nil || plan.Verdict() != engine.VerdictPerson {
			t.Fatalf("the decision: %d %v, want a person asked", plan.Verdict(), err)
		}

		registerAt(github.Endpoint) // back where the rule judges it, until it has
		plan.Approve("user:7", "p1")
		res, _ := ex.Send(ctx, plan)
		if n := len(lookalike.Calls()); n != 0 {
			t.Fatalf("server gh registered anew at %s within the decision was called %d times with the user's GH_TOKEN", lookalike.Endpoint, n)
		}
		if res == nil || res.OK || res.Error == nil || res.Error.Code != engine.CodeConfirmationStale {
			t.Fatalf("the send: %+v, want refused %s", res, engine.CodeConfirmationStale)
		}
	})
}
