package api

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestGrantChangeTellsSessions: a role withdrawn in RuoYi (its tables
// carry no trigger) told no /mcp session its tools changed: the session
// was shown the old list until its permissions' TTL ended and something
// asked again. Now the grants' tables are digested at each poll
// (store.Watcher.Grants, access.Checker.FollowGrants): the session whose
// list changed is told (notifications/tools/list_changed) within that
// poll, and lists without the tool.
func TestGrantChangeTellsSessions(t *testing.T) {
	st := testdb.Script(t, "../access/testdata/ruoyi-vue/ry_20260417.sql")
	ctx := context.Background()
	checker, err := access.New(st.DB(), access.Settings{Mode: access.ModeOpen, Source: access.SourceRuoYi, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w := store.NewWatcher(st, time.Hour, slog.New(slog.DiscardHandler))
	if digest, ok := checker.FollowGrants(func() int64 { return w.Current().Grants }); ok {
		w.Grants = digest
	}
	poll := func() {
		if _, err := w.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	poll()
	e := newMCPEnv(t, st, func(s *Server) { s.Access, s.Changes = checker, w })
	for _, p := range []string{
		`{"name": "list_users", "description": "Lists users.", "perms": ["system:user:list"], "parameters": {"type": "object"}, "execution": {"method": "GET", "base_url": "https://ruoyi.example/users"}}`,
		`{"name": "weather", "description": "The weather.", "parameters": {"type": "object"}, "execution": {"method": "GET", "base_url": "https://ruoyi.example/weather"}}`,
	} {
		if code, out := e.do("POST", "/v1/plugins", mcpAdmin, p); code != http.StatusCreated {
			t.Fatalf("plugin: %d %v", code, out)
		}
	}
	poll()
	tok, hash := auth.NewToken()
	if err := st.CreateToken(ctx, &store.Token{UserID: 2, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	told := make(chan struct{}, 8)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { told <- struct{}{} },
	}).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: bearerRT(tok)}},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	names := func() []string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(); !slices.Contains(got, "list_users") {
		t.Fatalf("user 2 (ry, RuoYi's common role) lists %v, want list_users", got)
	}
	if _, err := st.DB().ExecContext(ctx, "DELETE FROM sys_user_role WHERE user_id = 2"); err != nil {
		t.Fatal(err)
	}
	poll()
	select {
	case <-told:
	case <-time.After(10 * time.Second):
		t.Fatal("the session was not told its tools changed after its role was withdrawn")
	}
	if got := names(); slices.Contains(got, "list_users") {
		t.Errorf("after the role was withdrawn the session lists %v", got)
	}
}
