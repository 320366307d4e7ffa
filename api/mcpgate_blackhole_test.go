package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// TestMCPGateBlackholed: with the database blackholed (connections open,
// nothing answered), an MCP client's consequential call waiting for a
// person (api.MCPGate) is decided within store.QueryTimeout, however
// many wait at once: Hold answers the clear tool error, nothing sent, and
// an elicitation's answer (Decide) approves nothing.
func TestMCPGateBlackholed(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	gate := &api.MCPGate{Store: testdb.At(t, through), Confirm: confirm.Consequential}
	p := &plugins.Plugin{Name: "delete_repo"}
	call := func(user int64) (*engine.Call, *engine.Plan) {
		return &engine.Call{Plugin: p, Arguments: json.RawMessage(`{"repo":"a"}`), UserID: user},
			&engine.Plan{Plugin: p, Person: &engine.Preview{Plugin: p, Digest: "d1",
				Request: &engine.SentRequest{Method: "DELETE", URL: "https://api.example/repos/a"}}}
	}
	// Live, the call waits for a person: its item is stored.
	c, plan := call(7)
	w := gate.Hold(t.Context(), c, plan)
	if w == nil || w.ID == "" || !strings.Contains(w.Text, "confirmation_required") {
		t.Fatalf("a live hold: %+v", w)
	}
	id := w.ID

	proxy.Blackhole()
	// The test's own bound: the code under test's must come well before.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	bound := store.QueryTimeout + 2*time.Second
	done := make(chan string, 3)
	for _, user := range []int64{7, 7, 8} {
		go func() {
			c, plan := call(user)
			w := gate.Hold(ctx, c, plan)
			if w == nil {
				done <- "approved: the call would be sent"
				return
			}
			done <- w.Text
		}()
	}
	timeout := time.After(bound)
	for range 3 {
		select {
		case text := <-done:
			if !strings.Contains(text, "confirmation_unavailable") || !strings.Contains(text, "nothing was sent") {
				t.Errorf("a hold on a blackholed database: %s, want confirmation_unavailable", text)
			}
		case <-timeout:
			t.Fatalf("a hold not decided within %v: held by the database", bound)
		}
	}

	began := time.Now()
	c, plan = call(7)
	if gate.Decide(ctx, c, plan, id, true) {
		t.Error("an elicitation's approval on a blackholed database approved the call")
	}
	if took := time.Since(began); took > bound {
		t.Errorf("an elicitation's answer not decided within %v (%v): held by the database", bound, took)
	}
}
