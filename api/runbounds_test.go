package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// Issue 30, point 4: a run whose reply is over 16 MiB is stored all the
// same (MariaDB's default max_allowed_packet), its longest texts cut with
// a marker.
func TestStoredRunWithinPacket(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		llm := openaitest.New(t)
		e := newEnv(t, st, func(s *api.Server) {
			s.Runner = &loop.Runner{Client: loop.NewClient(llm.Config()), Executor: s.Executor, DefaultModel: "scripted",
				LLMTimeout: 30 * time.Second, MaxResponseBytes: 32 << 20}
		})
		// 9 MiB of arguments, kept in the message and in the step: 18 MiB.
		llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "nope", Arguments: `{"q":"` + strings.Repeat("x", 9<<20) + `"}`}}},
			openaitest.Turn{Content: "done"})
		code, body := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": 7, "messages": []map[string]string{{"role": "user", "content": "hi"}}})
		if code != 200 || body["status"] != "completed" {
			t.Fatalf("run: %d %v", code, body["error"])
		}
		run, err := st.GetRun(t.Context(), body["run_id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Reply) == 0 || len(run.Reply) > store.MaxRunReply || run.Status != "completed" {
			t.Fatalf("stored reply of %d bytes, status %s", len(run.Reply), run.Status)
		}
		code, stored := e.do("GET", "/v1/runs/"+run.ID, serviceToken, nil)
		msgs, _ := stored["messages"].([]any)
		if code != 200 || stored["cut"] != true || len(msgs) != 3 || !strings.Contains(string(run.Reply), "…[cut: ") {
			t.Errorf("GET the run: %d, cut %v, %d messages", code, stored["cut"], len(msgs))
		}
	})
}
