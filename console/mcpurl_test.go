package console_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPServerURLKeyNotToBrowser: an MCP server registered at a hosted
// gateway's URL with its key in the query (…/mcp?api_key=…) is answered
// to a console session, at its registration and in the servers' list,
// with that value written "…", as its static headers are by name only;
// a bearer client (the CLI, RuoYi's service) still reads the URL whole.
// Before, the console's MCP page and the answers it got held the key.
func TestMCPServerURLKeyNotToBrowser(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		const key = "gw-key-5b1c9e0d7a"
		e := newEnv(t, st, newMasterKey())
		admin := e.client()
		e.signIn(admin, adminToken)
		_, csrf := sessionOf(t, e, admin)
		full := "https://gateway.example/mcp?api_key=" + key + "&v=2"
		code, row := do(t, admin, "POST", e.url+"/v1/mcp/servers", csrf, `{"name": "gw", "url": "`+full+`"}`)
		if code != http.StatusCreated {
			t.Fatalf("register: %d %v", code, row)
		}
		_, list := do(t, admin, "GET", e.url+"/v1/mcp/servers", "", "")
		for what, v := range map[string]any{"the registration's answer": row, "the servers' list": list} {
			b, _ := json.Marshal(v)
			if strings.Contains(string(b), key) || !strings.Contains(string(b), "gateway.example/mcp?api_key=") {
				t.Errorf("%s to the console: %s", what, b)
			}
		}
		bearer := &http.Client{Transport: bearerRT(adminToken)}
		_, whole := do(t, bearer, "GET", e.url+"/v1/mcp/servers", "", "")
		if b, _ := json.Marshal(whole); !strings.Contains(string(b), key) {
			t.Errorf("the bearer client's list lacks the URL whole: %s", b)
		}
		var n int
		if err := e.st.DB().QueryRow("select count(*) from sys_ai_mcp_server where url = ?", full).Scan(&n); err != nil || n != 1 {
			t.Errorf("the stored URL: %d rows whole, %v", n, err)
		}
	})
}
