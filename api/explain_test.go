package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/internal/openaitest"
)

// TestToolAccessRuoYi (issue 46 point 5): over RuoYi-Vue's own tables,
// GET /v1/tools/{name}/access names the permissions a tool needs, the
// roles whose menus grant them, and for a user the executor's decision
// step by step — agreeing with what a call of that user gets — and
// answers the service and the administrator only.
func TestToolAccessRuoYi(t *testing.T) {
	e := newRuoYiEnv(t, access.ModePerms)
	code, out := e.do("GET", "/v1/tools/list_users/access", adminToken, nil)
	roles, _ := out["roles"].([]any)
	if code != http.StatusOK || out["mode"] != "perms" || out["source"] != "ruoyi" || len(roles) != 1 ||
		roles[0].(map[string]any)["role_key"] != "common" || roles[0].(map[string]any)["grants"] != "system:user:list" || out["decision"] != nil {
		t.Fatalf("list_users: %d %v", code, out)
	}
	if code, out := e.do("GET", "/v1/tools/list_roles/access", serviceToken, nil); code != http.StatusOK || len(out["roles"].([]any)) != 0 {
		t.Errorf("list_roles (the common role lost its menu): %d %v", code, out)
	}
	for _, tt := range []struct {
		tool   string
		user   string
		reason string // of the deciding step
	}{
		{"list_users", "1", access.ReasonAllPerms},
		{"list_users", "2", access.ReasonSource},
		{"list_roles", "2", access.ReasonSource},
		{"leave", "2", access.ReasonSource},
		{"weather", "2", access.ReasonPermsMode},
		{"list_users", "0", access.ReasonNoUser},
		{"list_users", "99", access.ReasonLogin}, // RuoYi has no user 99: it would not log one in
	} {
		code, out := e.do("GET", "/v1/tools/"+tt.tool+"/access?user_id="+tt.user, adminToken, nil)
		d, _ := out["decision"].(map[string]any)
		if code != http.StatusOK || d == nil {
			t.Fatalf("%s for %s: %d %v", tt.tool, tt.user, code, out)
		}
		steps := d["steps"].([]any)
		last := steps[len(steps)-1].(map[string]any)
		want := tt.tool != "weather" && (tt.user == "1" || tt.user == "2" && ruoyiGrants[2][tt.tool]) // ModePerms: weather has none
		if d["allowed"] != want || last["reason"] != tt.reason || last["grants"] != want || last["message"] == "" {
			t.Errorf("%s for user %s: %v, want allowed %v by %s", tt.tool, tt.user, d, want, tt.reason)
		}
		// What a call of that user gets agrees (users 1 and 2 have tokens).
		if tok := e.tokens[map[string]int64{"1": 1, "2": 2}[tt.user]]; tok != "" {
			code, _ := e.do("POST", "/v1/execute", tok, map[string]any{"name": tt.tool, "arguments": map[string]any{"q": "x"}})
			if (code == http.StatusOK) != want {
				t.Errorf("%s for user %s: the call answered %d, the explanation %v", tt.tool, tt.user, code, want)
			}
		}
	}
	if _, out := e.do("GET", "/v1/tools/list_users/access?user_id=2", adminToken, nil); out["user_name"] != "若依 (ry)" {
		t.Errorf("the user's name from sys_user: %v", out["user_name"])
	}
	for _, tt := range []struct {
		path, token string
		code        int
	}{
		{"/v1/tools/list_users/access?user_id=2", e.tokens[2], http.StatusForbidden},
		{"/v1/tools/nothing/access", adminToken, http.StatusNotFound},
		{"/v1/tools/list_users/access?user_id=x", adminToken, http.StatusBadRequest},
	} {
		if code, out := e.do("GET", tt.path, tt.token, nil); code != tt.code {
			t.Errorf("%s: %d %v, want %d", tt.path, code, out, tt.code)
		}
	}
}

// TestRunsListed (issue 51 point 2): GET /v1/runs lists every run, newest
// first, with the start of its first message, filtered by status, user
// and time and paged; a per-user token sees its own; a bad filter is 400
// naming it.
func TestRunsListed(t *testing.T) {
	llm := openaitest.New(t)
	llm.Script(openaitest.Turn{Content: "a"}, openaitest.Turn{Content: "b"}, openaitest.Turn{Content: "c"})
	e := newRuoYiEnv(t, access.ModeOpen, withModel(llm))
	for i, u := range []int64{1, 2, 2} {
		code, out := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": u,
			"messages": []map[string]string{{"role": "system", "content": "be brief"}, {"role": "user", "content": "question " + string(rune('a'+i))}}})
		if code != http.StatusOK {
			t.Fatalf("run %d: %d %v", i, code, out)
		}
	}
	code, out := e.do("GET", "/v1/runs", adminToken, nil)
	runs, _ := out["runs"].([]any)
	if code != http.StatusOK || len(runs) != 3 {
		t.Fatalf("all runs: %d %v", code, out)
	}
	var firsts []string
	for _, r := range runs {
		firsts = append(firsts, r.(map[string]any)["first_message"].(string))
	}
	if !slices.Equal(firsts, []string{"question c", "question b", "question a"}) || runs[1].(map[string]any)["user_name"] != "若依 (ry)" {
		t.Errorf("newest first, with the first user message and the user's name: %v", runs)
	}
	if _, out := e.do("GET", "/v1/runs?limit=2", adminToken, nil); len(out["runs"].([]any)) != 2 || out["next"] == nil {
		t.Errorf("a page of 2: %v", out)
	} else if _, rest := e.do("GET", "/v1/runs?limit=2&cursor="+out["next"].(string), adminToken, nil); len(rest["runs"].([]any)) != 1 || rest["next"] != nil {
		t.Errorf("the next page: %v", rest)
	}
	for path, want := range map[string]int{
		"/v1/runs?user_id=2":                  2,
		"/v1/runs?status=completed&user_id=1": 1,
		"/v1/runs?status=failed":              0,
		"/v1/runs?since=2000-01-01T00:00:00Z": 3,
		"/v1/runs?until=2000-01-01T00:00:00Z": 0,
	} {
		if code, out := e.do("GET", path, serviceToken, nil); code != http.StatusOK || len(out["runs"].([]any)) != want {
			t.Errorf("%s: %d %v, want %d runs", path, code, out, want)
		}
	}
	if code, out := e.do("GET", "/v1/runs", e.tokens[1], nil); code != http.StatusOK || len(out["runs"].([]any)) != 1 {
		t.Errorf("user 1's token: %d %v", code, out)
	}
	if code, _ := e.do("GET", "/v1/runs?user_id=2", e.tokens[1], nil); code != http.StatusForbidden {
		t.Errorf("user 1's token asking for user 2's runs: %d", code)
	}
	for _, bad := range []string{"status=done", "since=yesterday", "until=1", "cursor=zz"} {
		if code, out := e.do("GET", "/v1/runs?"+bad, adminToken, nil); code != http.StatusBadRequest {
			t.Errorf("%s: %d %v", bad, code, out)
		}
	}
}
