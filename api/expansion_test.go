package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
	openai "github.com/sashabaranov/go-openai"
)

// TestSearchExpansion: with the model's expansion on, each tool's
// requests are written in the background once per content and stored,
// and a request in words no tool has finds the tool the model wrote them
// for; a new tool is the only one asked about.
func TestSearchExpansion(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		m := openaitest.New(t)
		exp := &toolsearch.Expansion{Client: openai.NewClientWithConfig(m.Config()), Model: "test-model", Store: st}
		changes := store.NewWatcher(st, time.Hour, nil)
		e := newEnv(t, st, func(s *api.Server) { s.Changes, s.Expansion = changes, exp })
		changes.Poll(ctx)
		rows := func() int {
			var n int
			st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM sys_ai_search_request WHERE model = 'test-model'").Scan(&n)
			return n
		}
		search := func(q string) []any {
			code, out := e.do("GET", "/v1/tools/search?q="+strings.ReplaceAll(q, " ", "+"), adminToken, nil)
			if code != http.StatusOK {
				t.Fatalf("search: %d %v", code, out)
			}
			rs, _ := out["results"].([]any)
			return rs
		}
		add := func(doc, answer string, want int) {
			m.Script(openaitest.Turn{Content: answer})
			if code, out := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
				t.Fatalf("create: %d %v", code, out)
			}
			changes.Poll(ctx)
			search("anything") // loads the catalog: the requests are written in the background
			waitFor(t, func() bool { return rows() == want })
		}
		add(tool("car_hire", "Hire a car", "Books a vehicle at a station.", ""), `["lease an automobile for the weekend"]`, 1)
		add(tool("issues_create", "Create an issue", "Opens a new issue.", ""), `["report a bug"]`, 2)
		waitFor(t, func() bool {
			rs := search("lease an automobile")
			return len(rs) > 0 && rs[0].(map[string]any)["name"] == "car_hire"
		})
		if n := len(m.Requests()); n != 2 || m.Pending() != 0 {
			t.Fatalf("the model was asked %d times (%d answers left), want 2", n, m.Pending())
		}
	})
}
