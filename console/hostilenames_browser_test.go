package console_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestHostileNamesInBrowser: names are data, never keys of a page's
// plain objects. A user whose per-user token runs inline plugins named
// constructor, __proto__ or toString (or an imported operationId of that
// name) wrote execution records the Activity page grouped by name into a
// {}: the chart threw on the object's prototype, and the administrator's
// Activity page showed neither the calls nor the administrators' log
// until 500 other calls had pushed those out (before the fix it never
// became ready).
func TestHostileNamesInBrowser(t *testing.T) {
	needBrowser(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok": true}`))
	}))
	defer up.Close()
	st := testdb.Open(t, "sqlite")
	e := newEnv(t, st, newMasterKey())
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	_, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "low"}`)
	user := tok["token"].(string)
	names := []string{"constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "plain_tool"}
	for _, n := range names {
		req, _ := http.NewRequest("POST", e.url+"/v1/execute", strings.NewReader(fmt.Sprintf(
			`{"plugin": {"name": %q, "description": "x", "parameters": {"type": "object"}, "execution": {"method": "GET", "base_url": %q}}, "arguments": {}}`, n, up.URL+"/x")))
		req.Header.Set("Authorization", "Bearer "+user)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", n, resp.StatusCode, b)
		}
	}
	// Records are written behind the call.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n := len(apiGet(t, e.url, "/v1/executions?limit=50")["executions"].([]any))
		if n == len(names) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d execution records, want %d", n, len(names))
		}
	}

	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.open(e.url, "activity", "activity")
	rows := tb.text("#page table")
	for _, n := range names {
		if !strings.Contains(rows, n) {
			t.Errorf("the activity does not show the call of %s", n)
		}
	}
	if got := eval[int](tb, `document.querySelectorAll('#page svg text[font-weight="600"]').length`); got != len(names) {
		t.Errorf("the chart draws %d plugins, want %d", got, len(names))
	}
	tb.wait("#audit table")
}
