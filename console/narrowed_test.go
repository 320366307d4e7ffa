package console_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/access/accesstest"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestNarrowedSessionSeesItsTools (review 68, the lead's decision): a
// console session opened with a token with fixed perms is that token:
// Approvals lists the waiting calls of the tools its perms allow only,
// and another tool's call is 404 to it, still waiting; a session of the
// user's token without perms lists and decides both.
func TestNarrowedSessionSeesItsTools(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, newMasterKey(), func(s *api.Server) {
			s.Access = &access.Checker{Source: accesstest.Same("search:query", "hr:payroll:edit"), Name: "test"}
		})
		admin := e.client()
		e.signIn(admin, adminToken)
		_, csrf := sessionOf(t, e, admin)
		for _, doc := range []string{
			`{"name":"search","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"http://127.0.0.1:9/search"},"perms":["search:query"]}`,
			`{"name":"payroll","description":"d","parameters":{"type":"object"},"execution":{"method":"POST","base_url":"http://127.0.0.1:9/payroll"},"perms":["hr:payroll:edit"]}`,
		} {
			if code, out := do(t, admin, "POST", e.url+"/v1/plugins", csrf, doc); code != http.StatusCreated {
				t.Fatalf("add plugin: %d %v", code, out)
			}
		}
		ctx := context.Background()
		user := int64(7)
		ids := map[string]string{}
		for _, tool := range []string{"search", "payroll"} {
			id := strings.Repeat(tool[:1], 32)
			ids[tool] = id
			if err := st.CreatePendingItem(ctx, &store.PendingItem{ID: id, UserID: &user, Principal: "user:7", Kind: "confirmation", Tool: tool,
				Digest: "d", Item: store.JSON(`{"id":"` + id + `","kind":"confirmation","tool":"` + tool + `"}`), ExpireTime: time.Now().Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		narrow, _, err := api.IssueToken(ctx, st, 7, "agent", 0, "", "search:query")
		if err != nil {
			t.Fatal(err)
		}
		full, _, err := api.IssueToken(ctx, st, 7, "person", 0, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name, token string
			want        []string
		}{
			{"a narrowed token's session", narrow, []string{"search"}},
			{"the user's session", full, []string{"payroll", "search"}},
		} {
			c := e.client()
			e.signIn(c, tt.token)
			_, csrf := sessionOf(t, e, c)
			code, out := do(t, c, "GET", e.url+"/v1/pending", "", "")
			if code != http.StatusOK {
				t.Fatalf("%s: GET /v1/pending: %d %v", tt.name, code, out)
			}
			var got []string
			for _, it := range out["pending"].([]any) {
				got = append(got, it.(map[string]any)["tool"].(string))
			}
			if slices.Sort(got); !slices.Equal(got, tt.want) {
				t.Errorf("%s lists %v, want %v", tt.name, got, tt.want)
			}
			if tt.token != narrow {
				continue
			}
			if code, out := do(t, c, "POST", e.url+"/v1/pending/"+ids["payroll"], csrf, `{"decision":"approve"}`); code != http.StatusNotFound {
				t.Errorf("%s approving payroll: %d %v, want 404", tt.name, code, out)
			}
			if it, err := st.GetPendingItem(ctx, ids["payroll"]); err != nil || it.Status != store.PendingWaiting {
				t.Errorf("the payroll item: %+v %v, want still waiting", it, err)
			}
		}
	})
}
