package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestDirectCallsTakeTwoSteps: under the default policy a per-user
// token's direct call of a consequential plugin (POST /v1/execute, POST
// /v1/tools/{name}/call) is answered 409 confirmation_required with the
// prepared request, nothing sent; prepare and confirmation send exactly
// that request once, for the principal that prepared it only; a changed
// plugin makes the confirmation stale. The service token keeps today's
// behaviour.
func TestDirectCallsTakeTwoSteps(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
		deletes := func() int { return up.count(http.MethodDelete) }
		e := newEnv(t, st, func(s *api.Server) { s.Confirm = confirm.Consequential; s.MCP = &api.MCPConfig{} })
		plugin := func(name, method, path string) map[string]any {
			return map[string]any{"name": name, "description": name,
				"parameters":  map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}},
				"execution":   map[string]any{"method": method, "base_url": up.URL + path},
				"auth_config": map[string]any{"type": "api_key", "mapping": []map[string]string{{"source": "GH_TOKEN", "target": "X-Token"}}}}
		}
		for _, p := range []map[string]any{plugin("delete_repo", "DELETE", "/repo"), plugin("list_repos", "GET", "/repos")} {
			if code, body := e.do("POST", "/v1/plugins", adminToken, p); code != http.StatusCreated {
				t.Fatalf("create: %d %v", code, body)
			}
		}
		if code, body := e.do("PUT", "/v1/credentials/7/GH_TOKEN", serviceToken, map[string]string{"value": ghToken}); code/100 != 2 {
			t.Fatalf("credential: %d %v", code, body)
		}
		token := func(user int) string {
			_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": user, "name": "t"})
			return tok["token"].(string)
		}
		seven, eight := token(7), token(8)
		del := map[string]any{"name": "delete_repo", "arguments": map[string]string{"repo": "blindexec"}}

		code, body := e.do("POST", "/v1/execute", seven, del)
		details, _ := body["error"].(map[string]any)["details"].(map[string]any)
		if code != http.StatusConflict || body["error"].(map[string]any)["code"] != "confirmation_required" || deletes() != 0 {
			t.Fatalf("a user's DELETE: %d %v, %d sent; want 409 confirmation_required", code, body, deletes())
		}
		if req := details["pending"].(map[string]any)["request"].(map[string]any); req["method"] != "DELETE" || req["url"] != up.URL+"/repo?repo=blindexec" {
			t.Errorf("prepared request: %v", req)
		}
		if code, body := e.do("POST", "/v1/execute", seven, map[string]any{"name": "list_repos"}); code != http.StatusOK || body["ok"] != true {
			t.Errorf("a user's GET: %d %v", code, body)
		}
		if code, _ := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "delete_repo", "user_id": 7, "arguments": map[string]string{"repo": "svc"}}); code != http.StatusOK || deletes() != 1 {
			t.Fatalf("the service token's DELETE: %d, %d sent; want today's behaviour", code, deletes())
		}

		prep := map[string]any{"name": "delete_repo", "arguments": map[string]string{"repo": "blindexec"}, "prepare": true}
		code, body = e.do("POST", "/v1/execute", seven, prep)
		if code != http.StatusOK || body["status"] != "prepared" || deletes() != 1 {
			t.Fatalf("prepare: %d %v", code, body)
		}
		id := body["pending"].(map[string]any)["id"].(string)
		send := map[string]any{"name": "delete_repo", "arguments": map[string]string{"repo": "blindexec"}, "confirmation": id}
		for _, other := range []string{eight, serviceToken} {
			if code, _ := e.do("POST", "/v1/execute", other, send); code != http.StatusNotFound || deletes() != 1 {
				t.Errorf("another principal confirms: %d, want 404", code)
			}
		}
		code, body = e.do("POST", "/v1/execute", seven, send)
		if code != http.StatusOK || body["ok"] != true || deletes() != 2 {
			t.Fatalf("confirmed: %d %v, %d sent", code, body, deletes())
		}
		if last := up.received()[len(up.received())-1]; last.uri != "/repo?repo=blindexec" || last.header.Get("X-Token") != ghToken {
			t.Errorf("sent %s X-Token=%q", last.uri, last.header.Get("X-Token"))
		}
		if code, body := e.do("POST", "/v1/execute", seven, send); code != http.StatusConflict || deletes() != 2 {
			t.Errorf("the confirmation reused: %d %v", code, body)
		}

		// POST /v1/tools/{name}/call: the same rule, the id in a header.
		call := func(confirmation string) (int, map[string]any) {
			req, _ := http.NewRequest("POST", e.url+"/v1/tools/delete_repo/call", bytes.NewReader([]byte(`{"repo":"x"}`)))
			req.Header.Set("Authorization", "Bearer "+seven)
			req.Header.Set("Content-Type", "application/json")
			if confirmation != "" {
				req.Header.Set(api.HeaderConfirmation, confirmation)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			json.NewDecoder(resp.Body).Decode(&out)
			return resp.StatusCode, out
		}
		code, body = call("")
		if code != http.StatusConflict || deletes() != 2 {
			t.Fatalf("tools call: %d %v", code, body)
		}
		id = body["error"].(map[string]any)["details"].(map[string]any)["pending"].(map[string]any)["id"].(string)
		if code, body := call(id); code != http.StatusOK || deletes() != 3 {
			t.Fatalf("tools call confirmed: %d %v, %d sent", code, body, deletes())
		}

		// Stale: the plugin changed between the two steps.
		_, body = e.do("POST", "/v1/execute", seven, prep)
		send["confirmation"] = body["pending"].(map[string]any)["id"]
		if code, body := e.do("PUT", "/v1/plugins/delete_repo", adminToken, plugin("delete_repo", "DELETE", "/repo/v2")); code != http.StatusOK {
			t.Fatalf("put: %d %v", code, body)
		}
		if code, body := e.do("POST", "/v1/execute", seven, send); code != http.StatusConflict || body["error"].(map[string]any)["code"] != "confirmation_stale" || deletes() != 3 {
			t.Errorf("stale confirmation: %d %v, %d sent", code, body, deletes())
		}
	})
}

// TestConfirmedCallIsNeverRetried: a confirmed PUT answered 503 is not
// retried (it may have reached the upstream), where an unconfirmed one
// is, as idempotent calls are.
func TestConfirmedCallIsNeverRetried(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	e := newEnv(t, st, func(s *api.Server) { s.Confirm = confirm.Consequential })
	plugin := map[string]any{"name": "put_item", "description": "Put", "parameters": map[string]any{"type": "object"},
		"execution": map[string]any{"method": "PUT", "base_url": up.URL + "/item", "retry": map[string]any{"max_attempts": 3, "backoff_ms": 1}}}
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "put_item"})
	if n := up.count(http.MethodPut); n != 3 {
		t.Fatalf("an unconfirmed PUT answered 503 was sent %d times, want 3 (retried)", n)
	}
	_, prep := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "put_item", "prepare": true})
	id := prep["pending"].(map[string]any)["id"].(string)
	e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "put_item", "confirmation": id})
	if n := up.count(http.MethodPut); n != 4 {
		t.Errorf("a confirmed PUT answered 503 was sent %d times, want once", n-3)
	}
}

// TestConfirmationDuringOutage: a confirmation sent while the database is
// unreachable cannot be checked, so nothing is sent — and the caller is
// told why, 503 database_unavailable with Retry-After, not 500 internal.
func TestConfirmationDuringOutage(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite) // closed mid-test: the outage
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
	e := newEnv(t, st, func(*api.Server) {})
	p := map[string]any{"name": "delete_repo", "description": "d", "parameters": map[string]any{"type": "object"},
		"execution": map[string]any{"method": "DELETE", "base_url": up.URL + "/repo"}}
	if code, body := e.do("POST", "/v1/plugins", adminToken, p); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "delete_repo", "user_id": 7, "prepare": true})
	if code != http.StatusOK || body["status"] != "prepared" {
		t.Fatalf("prepare: %d %v", code, body)
	}
	id := body["pending"].(map[string]any)["id"].(string)
	st.Close()
	code, body = e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "delete_repo", "user_id": 7, "confirmation": id})
	if code != http.StatusServiceUnavailable || errCodeOf(body) != "database_unavailable" || up.count(http.MethodDelete) != 0 {
		t.Errorf("a confirmation during the outage: %d %v, %d sent; want 503 database_unavailable, nothing sent", code, body, up.count(http.MethodDelete))
	}
}
