package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestReplicasPollMode (issue 52 point 2): two replicas with
// BLINDEXEC_CHANGE_DETECTION=poll on a MySQL database migrate it with no
// trigger; a plugin added through one is served by the other after a
// poll; a description changed and a token revoked by plain SQL are seen
// by every replica within the audit's bound, (AUDIT_POLLS + 1) polls.
func TestReplicasPollMode(t *testing.T) {
	dsn := testdb.DSN(t, store.DialectMySQL)
	key := make([]byte, 32)
	rand.Read(key)
	const admin = "poll-admin-token"
	const poll, audits = 100 * time.Millisecond, 5
	rs := startReplicas(t, 2, dsn, "BLINDEXEC_ADMIN_TOKEN="+admin, "BLINDEXEC_MASTER_KEY="+base64.StdEncoding.EncodeToString(key),
		"BLINDEXEC_LOG_LEVEL=warn", fmt.Sprint("BLINDEXEC_CHANGE_POLL_MS=", poll.Milliseconds()), fmt.Sprint("BLINDEXEC_CHANGE_AUDIT_POLLS=", audits),
		"BLINDEXEC_CHANGE_DETECTION=poll")
	a, b := rs[0], rs[1]
	st, sql := openSQL(t, dsn)
	var triggers int
	if err := st.DB().QueryRowContext(context.Background(), "SELECT COUNT(*) FROM information_schema.triggers WHERE trigger_schema = DATABASE()").Scan(&triggers); err != nil {
		t.Fatal(err)
	}
	if triggers != 0 {
		t.Fatalf("%d triggers after serve migrated in poll mode", triggers)
	}
	if code, body := a.do(t, "POST", "/v1/plugins", admin, map[string]any{"name": "refund", "description": "refund an order",
		"parameters": map[string]any{"type": "object"}, "execution": map[string]any{"method": "POST", "base_url": "http://127.0.0.1:9"}}); code != http.StatusCreated {
		t.Fatalf("add plugin on A: %d %v", code, body)
	}
	tools := func(r *replica) string {
		_, body := r.do(t, "GET", "/v1/tools", admin, nil)
		return fmt.Sprint(body)
	}
	took := await(t, "B serving the plugin A added", func() bool { return strings.Contains(tools(b), "refund an order") })
	t.Logf("plugin added on A: served by B after %v", took)

	bound := (audits+1)*poll + 2*time.Second // the audit's bound, and slack for a loaded machine
	sql("UPDATE sys_ai_plugin SET description = 'refund an order in full' WHERE name = 'refund'")
	for _, r := range rs {
		took := await(t, "replica "+r.name+" serving the description changed by plain SQL", func() bool { return strings.Contains(tools(r), "refund an order in full") })
		t.Logf("description changed by plain SQL: served by %s after %v", r.name, took)
		if took > bound {
			t.Errorf("replica %s: %v, over the bound of %v", r.name, took, bound)
		}
	}

	code, created := a.do(t, "POST", "/v1/tokens", admin, map[string]any{"user_id": 7, "name": "revoked-by-sql"})
	if code != http.StatusCreated {
		t.Fatalf("create token on A: %d %v", code, created)
	}
	tok, id := created["token"].(string), int64(created["token_id"].(float64))
	b.awaitPoll(t, st)
	if code, body := b.do(t, "GET", "/v1/tools", tok, nil); code != http.StatusOK {
		t.Fatalf("B with the token: %d %v", code, body)
	}
	sql(fmt.Sprintf("DELETE FROM sys_ai_token WHERE token_id = %d", id))
	took = await(t, "B refusing the token revoked by plain SQL", func() bool {
		code, _ := b.do(t, "GET", "/v1/tools", tok, nil)
		return code == http.StatusUnauthorized
	})
	t.Logf("token revoked by plain SQL: refused by B after %v", took)
	if took > bound {
		t.Errorf("revoked token used for %v, over the bound of %v", took, bound)
	}
}
