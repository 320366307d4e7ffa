package api_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestRunPausedTwiceActsOnce: a run paused on a call, resumed, and paused
// again on the model's next call acts on the second pause's item alone
// when resumed again: the first approved call is not sent a second time.
func TestRunPausedTwiceActsOnce(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
		llm := openaitest.New(t)
		e := newEnv(t, st, withConfirmingModel(llm))
		llm.Script(
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "delete_repo", Arguments: `{"repo":"a"}`}}},
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "delete_repo", Arguments: `{"repo":"b"}`}}},
			openaitest.Turn{Content: "Both deleted."},
		)
		p := hijackPayload(up.URL)
		_, reply := e.do("POST", "/v1/runs", serviceToken, p)
		runID := reply["run_id"].(string)
		approve := func(reply map[string]any) map[string]any {
			t.Helper()
			item := pendingOf(t, reply)
			code, next := e.do("POST", "/v1/runs/"+runID+"/resume", serviceToken, map[string]any{
				"decisions": []map[string]string{{"id": item["id"].(string), "decision": "approve"}}, "credentials": p["credentials"]})
			if code != http.StatusOK {
				t.Fatalf("resume: %d %v", code, next)
			}
			return next
		}
		done := approve(approve(reply))
		if done["status"] != "completed" {
			t.Fatalf("the run: %v", done)
		}
		var deletes []string
		for _, r := range up.received() {
			if r.method == http.MethodDelete {
				deletes = append(deletes, r.uri)
			}
		}
		if len(deletes) != 2 || deletes[0] != "/repo?repo=a" || deletes[1] != "/repo?repo=b" {
			t.Errorf("DELETEs sent: %v, want a then b, once each", deletes)
		}
	})
}
