package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// get does one request on a connection of its own (as a load balancer's
// new connection would), returning the status and body; 0 and the error
// when it could not connect.
func get(url, token string) (int, string) {
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Operator 75: on SIGTERM, serve answers /readyz 503 "stopping" at once
// and goes on serving new connections for BLINDEXEC_SHUTDOWN_DRAIN_MS, so
// that a load balancer takes it out of rotation before its listener
// closes; then it shuts down as before. Before, the listener closed at
// once: /readyz was never 503, a new connection was refused.
func TestSIGTERMDrainsBeforeStopping(t *testing.T) {
	const admin = "drain-admin"
	const drain = 3 * time.Second
	r := startEngines(t, 1, testdb.DSN(t, store.DialectSQLite), admin, "BLINDEXEC_SHUTDOWN_DRAIN_MS=3000")[0]
	sent := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var body string
	await(t, "/readyz 503 after SIGTERM", func() bool {
		var code int
		code, body = get(r.url+"/readyz", "")
		return code == http.StatusServiceUnavailable
	})
	var answer struct {
		Error struct {
			Code    string
			Details map[string]string
		}
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil || answer.Error.Code != "not_ready" || answer.Error.Details["status"] != "stopping" {
		t.Errorf("/readyz while stopping: %s", body)
	}
	if code, body := get(r.url+"/v1/plugins", admin); code != http.StatusOK {
		t.Errorf("a new request during the drain: %d %s", code, body)
	}
	if code := exitOf(t, r.cmd); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	if took := time.Since(sent); took < drain {
		t.Errorf("serve exited %v after SIGTERM, before the %v drain was over", took, drain)
	}
	if code, _ := get(r.url+"/readyz", ""); code != 0 {
		t.Errorf("/readyz answered %d after the exit", code)
	}
}

// Operator 75: BLINDEXEC_PERMISSIONS=ruoyi on a database without RuoYi's
// tables refused every call while /readyz said ready. Now /readyz answers
// 503 naming the source and what it could not read, and ready once the
// tables are there. Before: 200 throughout.
func TestReadyzSaysThePermissionSourceIsUnreadable(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		dsn := testdb.DSN(t, kind)
		r := startServe(t, "A", dsn, engineEnv("ready-admin", []string{"BLINDEXEC_PERMISSIONS=ruoyi"})...)
		var body string
		await(t, "/readyz 503 without RuoYi's tables", func() bool {
			var code int
			code, body = get(r.url+"/readyz", "ready-admin") // the detail is the operator's
			return code == http.StatusServiceUnavailable && strings.Contains(body, "not_ready")
		})
		if !strings.Contains(body, "BLINDEXEC_PERMISSIONS=ruoyi") || !strings.Contains(body, "sys_user") {
			t.Errorf("/readyz does not name the source and its table: %s", body)
		}
		_, exec := openSQL(t, dsn)
		for _, q := range []string{
			"CREATE TABLE sys_user (user_id BIGINT PRIMARY KEY, status CHAR(1), del_flag CHAR(1))",
			"CREATE TABLE sys_user_role (user_id BIGINT, role_id BIGINT, PRIMARY KEY (user_id, role_id))",
			"CREATE TABLE sys_role (role_id BIGINT PRIMARY KEY, status CHAR(1), del_flag CHAR(1))",
			"CREATE TABLE sys_role_menu (role_id BIGINT, menu_id BIGINT, PRIMARY KEY (role_id, menu_id))",
			"CREATE TABLE sys_menu (menu_id BIGINT PRIMARY KEY, perms VARCHAR(100), status CHAR(1))",
		} {
			exec(q)
		}
		await(t, "/readyz 200 with RuoYi's tables", func() bool {
			code, _ := get(r.url+"/readyz", "")
			return code == http.StatusOK
		})
	})
}
