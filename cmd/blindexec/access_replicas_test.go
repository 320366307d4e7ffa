package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestAccessAcrossReplicas (issue 46 points 3 and 5): two engine
// processes on one MariaDB database holding RuoYi-Vue's own tables, with
// BLINDEXEC_PERMISSIONS=ruoyi and a TTL of one second. User 2 ("ry", of
// the common role) uses list_users (system:user:list, RuoYi's menu 100)
// within the agent staff. Disabling the role, deleting the menu or the
// user's role link in RuoYi's tables takes it away on both replicas
// within the TTL (and not merely eventually), and undoing it gives it
// back; an agent disabled through replica A is refused by replica B
// after one poll of the change counters.
func TestAccessAcrossReplicas(t *testing.T) {
	st, dsn := testdb.ScriptDSN(t, "../../access/testdata/ruoyi-vue/ry_20260417.sql")
	up, _ := countingUpstream(t)
	const admin = "access-replicas-admin"
	const ttl = time.Second
	rs := startEngines(t, 2, dsn, admin, "BLINDEXEC_PERMISSIONS=ruoyi",
		fmt.Sprintf("BLINDEXEC_PERMISSIONS_TTL_MS=%d", ttl.Milliseconds()))
	a, b := rs[0], rs[1]
	_, sql := openSQL(t, dsn)

	doc := fmt.Sprintf(`{"name":"list_users","description":"RuoYi's users","perms":["system:user:list"],
	  "parameters":{"type":"object","properties":{"q":{"type":"string"}}},"execution":{"method":"GET","base_url":"%s/users"}}`, up.URL)
	req, _ := http.NewRequest("POST", a.url+"/v1/plugins", strings.NewReader(doc))
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create plugin on A: %v %v", resp, err)
	}
	resp.Body.Close()
	weather := fmt.Sprintf(`{"name":"weather","description":"The weather","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/weather"}}`, up.URL)
	if code, out := a.do(t, "POST", "/v1/plugins", admin, json.RawMessage(weather)); code != http.StatusCreated {
		t.Fatalf("create weather on A: %d %v", code, out)
	}
	if code, out := a.do(t, "POST", "/v1/agents", admin, map[string]any{"name": "staff", "tools": map[string]any{"names": []string{"list_users"}}}); code != http.StatusCreated {
		t.Fatalf("create agent on A: %d %v", code, out)
	}
	code, created := a.do(t, "POST", "/v1/tokens", admin, map[string]any{"user_id": 2, "name": "ry"})
	if code != http.StatusCreated {
		t.Fatalf("create token on A: %d %v", code, created)
	}
	tok := created["token"].(string)
	b.awaitPoll(t, st)

	// uses reports whether user 2 lists, finds (a search, whose set of
	// usable tools is kept per user) and calls list_users within staff
	// on r, or is refused all three (anything else fails). A change
	// toward want may land between them (the TTL ran out in between):
	// answered as before, then as after, is not yet want.
	uses := func(r *replica, want bool) bool {
		t.Helper()
		_, list := r.do(t, "GET", "/v1/tools?agent=staff", tok, nil)
		_, search := r.do(t, "GET", "/v1/tools/search?agent=staff&q=users", tok, nil)
		code, out := r.do(t, "POST", "/v1/execute", tok, map[string]any{"name": "list_users", "agent": "staff", "arguments": map[string]any{"q": "x"}})
		seen := []bool{list["total"] == float64(1), search["total"] == float64(1), code == http.StatusOK}
		changed := slices.Index(seen, want)
		if changed >= 0 && slices.Contains(seen[changed:], !want) || !seen[2] && code != http.StatusForbidden {
			t.Fatalf("replica %s: listed, found, called %v (%v, %v), call %d %v", r.name, seen, list, search, code, out)
		}
		if changed == 0 {
			return want // all three as after
		}
		return !want
	}
	// within waits until user 2's use of list_users is want on both
	// replicas, which must happen within the TTL (and a poll's slack)
	// of when the change was made.
	within := func(change string, want bool) {
		t.Helper()
		start := time.Now()
		for _, r := range rs {
			for uses(r, want) != want {
				if time.Since(start) > ttl+time.Second {
					t.Fatalf("%s: replica %s still answers as before %v after the change", change, r.name, time.Since(start))
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		t.Logf("%s: seen by both replicas within %v", change, time.Since(start).Round(10*time.Millisecond))
	}
	within("start", true)
	for _, tt := range []struct {
		name     string
		do, undo []string
	}{
		{"disable the role", []string{"update sys_role set status = '1' where role_id = 2"}, []string{"update sys_role set status = '0' where role_id = 2"}},
		{"delete the menu", []string{"create table kept_menu as select * from sys_menu where menu_id = 100", "delete from sys_menu where menu_id = 100"},
			[]string{"insert into sys_menu select * from kept_menu", "drop table kept_menu"}},
		{"remove the user's role link", []string{"delete from sys_user_role where user_id = 2"}, []string{"insert into sys_user_role values (2, 2)"}},
	} {
		for _, q := range tt.do {
			sql(q)
		}
		within(tt.name, false)
		for _, q := range tt.undo {
			sql(q)
		}
		within("undo: "+tt.name, true)
	}

	// A user RuoYi no longer logs in uses no tool, one without perms
	// too, on both replicas within the TTL; enabled again, the tools are
	// back as fast.
	open := func(r *replica) bool {
		_, list := r.do(t, "GET", "/v1/tools", tok, nil)
		code, out := r.do(t, "POST", "/v1/execute", tok, map[string]any{"name": "weather", "arguments": map[string]any{"q": "x"}})
		if code != http.StatusOK && code != http.StatusForbidden {
			t.Fatalf("replica %s, weather: %d %v", r.name, code, out)
		}
		return list["total"] != float64(0) && code == http.StatusOK
	}
	for _, step := range []struct {
		sql  string
		want bool
	}{{"update sys_user set status = '1' where user_id = 2", false}, {"update sys_user set status = '0' where user_id = 2", true}} {
		sql(step.sql)
		start := time.Now()
		for _, r := range rs {
			for open(r) != step.want {
				if time.Since(start) > ttl+time.Second {
					t.Fatalf("%s: replica %s still answers as before %v after", step.sql, r.name, time.Since(start))
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		t.Logf("%s: an open plugin's use %v on both replicas within %v", step.sql, step.want, time.Since(start).Round(10*time.Millisecond))
	}

	// The agent changes through A: B refuses it after one poll.
	if code, out := a.do(t, "PUT", "/v1/agents/staff", admin, map[string]any{"name": "staff", "status": "1",
		"tools": map[string]any{"names": []string{"list_users"}}}); code != http.StatusOK {
		t.Fatalf("disable the agent on A: %d %v", code, out)
	}
	b.awaitPoll(t, st)
	for _, r := range rs {
		if code, out := r.do(t, "GET", "/v1/tools?agent=staff", tok, nil); code != http.StatusConflict {
			t.Errorf("replica %s, the agent disabled: %d %v, want 409 agent_disabled", r.name, code, out)
		}
		_, agents := r.do(t, "GET", "/v1/agents", tok, nil)
		if list, _ := agents["agents"].([]any); len(list) != 0 {
			t.Errorf("replica %s lists %v to user 2, want no agent", r.name, list)
		}
	}
}
