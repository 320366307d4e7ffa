package connections_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestDatabaseDownDuringCall: with the database gone, a call using a
// connection fails with a clear error, sends nothing and shows no token.
func TestDatabaseDownDuringCall(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider()
	e.addPlugin("acme_me", "read")
	e.connect(7, "alice")
	access, refresh := e.tokens(7)
	outputOf(t, e.call("acme_me", 7))
	hits := e.apiHits.Load()
	if err := e.st.DB().Close(); err != nil {
		t.Fatal(err)
	}
	code, out := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "acme_me", "arguments": map[string]any{}, "user_id": 7})
	t.Logf("%d %v", code, out)
	if out["ok"] == true {
		t.Fatalf("succeeded without the database: %v", out)
	}
	if n := e.apiHits.Load(); n != hits {
		t.Fatalf("the API got %d requests", n-hits)
	}
	b, _ := json.Marshal(out)
	for _, s := range []string{access, refresh} {
		if strings.Contains(string(b), s) || strings.Contains(e.logs.String(), s) {
			t.Fatal("a token shows")
		}
	}
}
