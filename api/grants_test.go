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
// list changed is told (notifications/tools/list_changed, on a
// 2025-11-25 session's stream and a 2026-07-28 subscriptions/listen
// alike) within that poll, and lists without the tool. On SQLite too
// (small76: there the digest was not read, CRC32 missing).
func TestGrantChangeTellsSessions(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		st, _ := testdb.RuoYi(t, kind, "../access/testdata/ruoyi-vue/ry_20260417.sql")
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
		names := func(t *testing.T, cs *sdk.ClientSession) []string {
			t.Helper()
			var out []string
			for tl, err := range cs.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, tl.Name)
			}
			return out
		}
		for _, era := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(era, func(t *testing.T) {
				told := make(chan struct{}, 8)
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
					ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { told <- struct{}{} },
				}).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: Bearer(tok)}},
					&sdk.ClientSessionOptions{ProtocolVersion: era})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				if v := cs.InitializeResult().ProtocolVersion; v != era {
					t.Fatalf("negotiated %s", v)
				}
				if got := names(t, cs); !slices.Contains(got, "list_users") {
					t.Fatalf("user 2 (ry, RuoYi's common role) lists %v, want list_users", got)
				}
				time.Sleep(1500 * time.Millisecond) // the listen stream open (it is opened after the session)
				for len(told) > 0 {
					<-told
				}
				if _, err := st.DB().ExecContext(ctx, "DELETE FROM sys_user_role WHERE user_id = 2"); err != nil {
					t.Fatal(err)
				}
				// The next era's session starts with the role again.
				defer func() {
					if _, err := st.DB().ExecContext(ctx, "INSERT INTO sys_user_role (user_id, role_id) VALUES (2, 2)"); err != nil {
						t.Error(err)
					}
					poll()
				}()
				poll()
				select {
				case <-told:
				case <-time.After(10 * time.Second):
					t.Fatal("the session was not told its tools changed after its role was withdrawn")
				}
				if got := names(t, cs); slices.Contains(got, "list_users") {
					t.Errorf("after the role was withdrawn the session lists %v", got)
				}
			})
		}
	})
}
