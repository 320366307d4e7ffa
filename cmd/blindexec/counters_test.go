package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestReplicasCounterSwitchedOff runs two replicas on one database and
// switches their change counter off the three ways issue 30 found: the
// counter rows deleted, the token table truncated (no trigger fires),
// a trigger dropped. Each time a token revoked (or wiped) stops answering
// on the replica that had it cached, within a few polls.
func TestReplicasCounterSwitchedOff(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		dsn := testdb.DSN(t, kind)
		key := make([]byte, 32)
		rand.Read(key)
		const admin = "replica-admin-token"
		env := []string{"BLINDEXEC_ADMIN_TOKEN=" + admin, "BLINDEXEC_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key),
			"BLINDEXEC_LOG_LEVEL=warn", "BLINDEXEC_CHANGE_POLL_MS=100", "BLINDEXEC_CHANGE_AUDIT_POLLS=5"}
		rs := startReplicas(t, 2, dsn, env...)
		a, b := rs[0], rs[1]
		st, sql := openSQL(t, dsn)
		// issue creates a token through A and has B cache it.
		issue := func(name string) (tok string, id int64) {
			t.Helper()
			code, created := a.do(t, "POST", "/v1/tokens", admin, map[string]any{"user_id": 7, "name": name})
			if code != http.StatusCreated {
				t.Fatalf("create token on A: %d %v", code, created)
			}
			tok, id = created["token"].(string), int64(created["token_id"].(float64))
			// B caches the token at the counters the database holds now,
			// so that only the counters' move can take it out.
			b.awaitPoll(t, st)
			if code, body := b.do(t, "GET", "/v1/tools", tok, nil); code != http.StatusOK {
				t.Fatalf("B with token %s: %d %v", name, code, body)
			}
			return tok, id
		}
		refused := func(r *replica, tok string) func() bool {
			return func() bool {
				code, _ := r.do(t, "GET", "/v1/tools", tok, nil)
				return code == http.StatusUnauthorized
			}
		}
		revoke := func(id int64) {
			t.Helper()
			if code, body := a.do(t, "DELETE", fmt.Sprintf("/v1/tokens/%d", id), admin, nil); code >= 300 {
				t.Fatalf("revoke on A: %d %v", code, body)
			}
		}

		// The rows deleted: once B has polled (and cached the token
		// again), a later revocation must still reach it.
		tok, id := issue("rows-deleted")
		counters := func() string {
			_, body := b.do(t, "GET", "/readyz", "", nil)
			return fmt.Sprint(body["changes"])
		}
		held := counters()
		sql("DELETE FROM sys_ai_change")
		await(t, "B polling after DELETE FROM sys_ai_change", func() bool { return counters() != held })
		if code, body := b.do(t, "GET", "/v1/tools", tok, nil); code != http.StatusOK {
			t.Fatalf("B with the token after the delete: %d %v", code, body)
		}
		revoke(id)
		took := await(t, "B refusing the token revoked after DELETE FROM sys_ai_change", refused(b, tok))
		t.Logf("counter rows deleted: B refuses the revoked token after %v", took)

		if kind == store.DialectMySQL {
			tok, _ := issue("truncated")
			sql("TRUNCATE TABLE sys_ai_token")
			took := await(t, "B refusing a token wiped by TRUNCATE TABLE", refused(b, tok))
			await(t, "A refusing a token wiped by TRUNCATE TABLE", refused(a, tok))
			t.Logf("TRUNCATE TABLE sys_ai_token: B refuses the wiped token after %v", took)
		}

		tok, id = issue("trigger-dropped")
		sql("DROP TRIGGER trg_sys_ai_token_delete")
		for _, r := range rs {
			took := await(t, "replica "+r.name+" not ready while the trigger is missing", func() bool {
				code, body := r.do(t, "GET", "/readyz", admin, nil) // the trigger's name is the operator's detail
				return code == http.StatusServiceUnavailable && strings.Contains(fmt.Sprint(body), "trg_sys_ai_token_delete")
			})
			t.Logf("DROP TRIGGER: replica %s not ready after %v", r.name, took)
		}
		revoke(id)
		took = await(t, "B refusing the token revoked without its trigger", refused(b, tok))
		t.Logf("DROP TRIGGER: B refuses the revoked token after %v", took)

		migrate := exec.Command(os.Args[0], "migrate")
		migrate.Env = append(os.Environ(), append([]string{"BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_DB=" + dsn}, env...)...)
		if out, err := migrate.CombinedOutput(); err != nil {
			t.Fatalf("migrate: %v\n%s", err, out)
		}
		for _, r := range rs {
			await(t, "replica "+r.name+" ready once migrate recreated the trigger", func() bool {
				code, _ := r.do(t, "GET", "/readyz", "", nil)
				return code == http.StatusOK
			})
		}
	})
}

// await polls cond until it holds (failing the test after 20 s) and
// returns how long that took.
func await(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 20*time.Second {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not after 20 s", what)
	return 0
}
