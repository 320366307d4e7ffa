package connections_test

import (
	"net/http"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestDeleteProviderRevokes: removing a provider removes every
// connection to it and revokes their tokens at the provider, as a
// disconnect does: nothing the engine forgot stays alive there.
func TestDeleteProviderRevokes(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider()
	e.addPlugin("acme_me", "read")
	var access []string
	for user, acct := range map[int64]string{7: "alice", 8: "bob"} {
		e.connect(user, acct)
		a, _ := e.tokens(user)
		if _, _, err := e.as.Check(bearer(a)); err != nil {
			t.Fatalf("user %d's token before: %v", user, err)
		}
		access = append(access, a)
	}
	if code, out := e.do("DELETE", "/v1/oauth/providers/acme", adminToken, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %v", code, out)
	}
	for i, a := range access {
		if _, _, err := e.as.Check(bearer(a)); err == nil {
			t.Fatalf("access token %d still works at the provider after its deletion", i)
		}
	}
	if cs, err := e.st.ListProviderConnections(t.Context(), "acme"); err != nil || len(cs) != 0 {
		t.Fatalf("connections left: %v %v", cs, err)
	}
	if code, _ := e.do("DELETE", "/v1/oauth/providers/acme", adminToken, nil); code != http.StatusNotFound {
		t.Fatalf("deleting twice: %d", code)
	}
}
