package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
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

// ops78: replicas of one database started with different admin tokens
// answered the same request differently and nothing said so. Each records
// keyed digests of its operator settings; a replica's /readyz shows the
// admin or metrics token which of its peers disagree and on what (still
// 200: the operator decides which is wrong), its log warns once, and
// neither shows a token. A peer that stops takes its row with it.
func TestReplicasWithAnotherAdminTokenAreReported(t *testing.T) {
	dsn := testdb.DSN(t, "sqlite")
	key := make([]byte, 32)
	rand.Read(key)
	env := func(admin string) []string {
		return []string{"BLINDEXEC_ADMIN_TOKEN=" + admin, "BLINDEXEC_SERVICE_TOKEN=service-ops78",
			"BLINDEXEC_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key), "BLINDEXEC_LOG_LEVEL=info",
			"BLINDEXEC_CHANGE_POLL_MS=100", "BLINDEXEC_CHANGE_AUDIT_POLLS=2"}
	}
	rs := startReplicasOn(t, []string{dsn, dsn}, env("admin-ops78-a")...)
	a := rs[0]
	if _, body := get(a.url+"/readyz", "admin-ops78-a"); strings.Contains(body, "disagree") {
		t.Fatalf("replicas of one env say they disagree: %s", body)
	}
	b := startServe(t, "B", dsn, env("admin-ops78-b")...)
	var body string
	await(t, "A's /readyz naming B's admin token", func() bool {
		var code int
		code, body = get(a.url+"/readyz", "admin-ops78-a")
		return code == http.StatusOK && strings.Contains(body, "another BLINDEXEC_ADMIN_TOKEN than this one")
	})
	if strings.Contains(body, "admin-ops78") || strings.Contains(body, "service-ops78") {
		t.Errorf("/readyz shows a token: %s", body)
	}
	if code, anyone := get(a.url+"/readyz", ""); code != http.StatusOK || strings.Contains(anyone, "disagree") {
		t.Errorf("/readyz without a token: %d %s; want 200 without the detail", code, anyone)
	}
	await(t, "B's /readyz naming A's", func() bool {
		_, body := get(b.url+"/readyz", "admin-ops78-b")
		return strings.Contains(body, "another BLINDEXEC_ADMIN_TOKEN than this one")
	})
	b.cmd.Process.Signal(os.Interrupt)
	b.cmd.Wait()
	await(t, "A agreeing once B stopped", func() bool {
		_, body := get(a.url+"/readyz", "admin-ops78-a")
		return !strings.Contains(body, "disagree")
	})
	a.cmd.Process.Signal(os.Interrupt)
	a.cmd.Wait() // its log is read once it stopped writing
	logs := a.logs.String()
	if !strings.Contains(logs, "replicas disagree: replica") || !strings.Contains(logs, "replicas agree again") || strings.Contains(logs, "admin-ops78") {
		t.Errorf("A's log: want the disagreement and the agreement, no token:\n%s", logs)
	}
}
