package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestExecuteTrace: the administrator asking for the trace gets the
// request sent, the credential headers masked; the service and a per-user
// token asking are refused; nobody gets it unasked, and the execution
// record does not keep it.
func TestExecuteTrace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"Status":"200"}`)
		})
		e := newEnv(t, st)
		if code, body := e.do("POST", "/v1/plugins", adminToken, seedPlugin(t, up.URL)); code != http.StatusCreated {
			t.Fatalf("add plugin: %d %v", code, body)
		}
		for k, v := range map[string]string{"QCC_KEY": qccKey, "QCC_SECRET": qccSecret} {
			if code, body := e.do("PUT", "/v1/credentials/7/"+k, adminToken, map[string]string{"value": v}); code != http.StatusNoContent {
				t.Fatalf("store %s: %d %v", k, code, body)
			}
		}
		_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "t"})
		userToken := tok["token"].(string)
		call := func(token string, trace bool) (int, map[string]any) {
			t.Helper()
			return e.do("POST", "/v1/execute", token, map[string]any{
				"name": "search_company_basic", "arguments": map[string]any{"keyword": "字节跳动"}, "user_id": 7, "trace": trace})
		}

		code, res := call(adminToken, true)
		if code != http.StatusOK || res["ok"] != true {
			t.Fatalf("admin with trace: %d %v", code, res)
		}
		req, _ := res["request"].(map[string]any)
		if req["method"] != "GET" || !strings.HasPrefix(req["url"].(string), up.URL+"/ECIV4/Search?keyword=") {
			t.Errorf("request sent: %v", req)
		}
		headers := map[string]any{}
		for _, h := range req["headers"].([]any) {
			hd := h.(map[string]any)
			headers[hd["name"].(string)] = hd["value"]
		}
		if headers["Token"] != auth.Redacted || headers["Timespan"] != auth.Redacted || headers["User-Agent"] == nil {
			t.Errorf("headers shown: %v", headers)
		}
		b, _ := json.Marshal(res)
		if strings.Contains(string(b), qccKey) || strings.Contains(string(b), qccSecret) {
			t.Errorf("a credential in the traced result: %s", b)
		}

		for name, token := range map[string]string{"service": serviceToken, "user": userToken} {
			if code, res := call(token, true); code != http.StatusForbidden {
				t.Errorf("%s token with trace: %d %v", name, code, res)
			}
			if code, res := call(token, false); code != http.StatusOK || res["request"] != nil {
				t.Errorf("%s token without trace: %d %v", name, code, res)
			}
		}
		if code, res := call(adminToken, false); code != http.StatusOK || res["request"] != nil {
			t.Errorf("admin without trace: %d %v", code, res)
		}
		if err := e.rec.Close(t.Context()); err != nil { // written, all of them
			t.Fatal(err)
		}
		_, list := e.do("GET", "/v1/executions", adminToken, nil)
		if n := count(list["executions"]); n != 4 {
			t.Fatalf("%d executions recorded, want 4: %v", n, list)
		}
		if b, _ := json.Marshal(list); strings.Contains(string(b), up.URL) || strings.Contains(string(b), "User-Agent") {
			t.Errorf("an execution record keeps the request sent: %s", b)
		}
	})
}
