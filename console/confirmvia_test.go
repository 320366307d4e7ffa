package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/internal/testdb"
)

// TestConfirmViaConsole: with BLINDEXEC_CONFIRM_VIA=console an agent
// holding the user's API token cannot approve its own call — not
// through /v1/pending, not by sending the confirmation, not in a console
// session opened with that token; a console-only token is refused on /v1
// and /mcp, and its console session's approval lets the call through,
// once.
func TestConfirmViaConsole(t *testing.T) {
	var mu sync.Mutex
	deletes := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Method == http.MethodDelete {
			deletes++
		}
		mu.Unlock()
		io.WriteString(w, `{"ok":true}`)
	}))
	defer up.Close()
	sent := func() int { mu.Lock(); defer mu.Unlock(); return deletes }
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey(), func(s *api.Server) {
		s.Confirm, s.ConfirmVia = confirm.Consequential, "console"
	})
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	if code, body := do(t, admin, "POST", e.url+"/v1/plugins", csrf, `{"name": "delete_repo", "description": "d", "parameters": {"type": "object"},
		"execution": {"method": "DELETE", "base_url": "`+up.URL+`/repo"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	_, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "agent"}`)
	agent := tok["token"].(string)
	_, tok = do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "person", "console_only": true}`)
	person := tok["token"].(string)

	withToken := func(tok, method, path, body string) (int, map[string]any) {
		return do(t, &http.Client{Transport: bearerRT(tok)}, method, e.url+path, "", body)
	}
	for _, path := range []string{"/v1/tools", "/mcp"} {
		if code, _ := withToken(person, "GET", path, ""); code != http.StatusUnauthorized {
			t.Errorf("a console-only token on %s: %d, want 401", path, code)
		}
	}

	code, prep := withToken(agent, "POST", "/v1/execute", `{"name": "delete_repo", "prepare": true}`)
	if code != http.StatusOK {
		t.Fatalf("prepare: %d %v", code, prep)
	}
	id := prep["pending"].(map[string]any)["id"].(string)
	send := `{"name": "delete_repo", "confirmation": "` + id + `"}`
	if code, body := withToken(agent, "POST", "/v1/execute", send); code != http.StatusConflict || sent() != 0 {
		t.Errorf("the agent sends its own confirmation: %d %v, %d sent", code, body, sent())
	}
	if code, _ := withToken(agent, "POST", "/v1/pending/"+id, `{"decision": "approve"}`); code != http.StatusForbidden {
		t.Errorf("the agent approves with the API token: %d, want 403", code)
	}
	agentSession := e.client()
	e.signIn(agentSession, agent)
	_, agentCSRF := sessionOf(t, e, agentSession)
	if code, _ := do(t, agentSession, "POST", e.url+"/v1/pending/"+id, agentCSRF, `{"decision": "approve"}`); code != http.StatusForbidden {
		t.Errorf("a console session opened with the API token approves: %d, want 403", code)
	}
	personSession := e.client()
	e.signIn(personSession, person)
	_, personCSRF := sessionOf(t, e, personSession)
	if code, body := do(t, personSession, "POST", e.url+"/v1/pending/"+id, personCSRF, `{"decision": "approve"}`); code != http.StatusOK {
		t.Fatalf("the person approves in the console: %d %v", code, body)
	}
	if code, body := withToken(agent, "POST", "/v1/execute", send); code != http.StatusOK || sent() != 1 {
		t.Fatalf("after the person's approval: %d %v, %d sent", code, body, sent())
	}
	if code, _ := withToken(agent, "POST", "/v1/execute", send); code != http.StatusConflict || sent() != 1 {
		t.Errorf("the approval reused: %d, %d sent", code, sent())
	}
}
