package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// replica is one `blindexec serve` process.
type replica struct {
	name string
	url  string
	logs *bytes.Buffer
	cmd  *exec.Cmd
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startReplicas starts n serve processes at once on the database dsn, with
// the same keys, and waits until every one is ready.
func startReplicas(t *testing.T, n int, dsn string, env ...string) []*replica {
	t.Helper()
	dsns := make([]string, n)
	for i := range dsns {
		dsns[i] = dsn
	}
	return startReplicasOn(t, dsns, env...)
}

// startReplicasOn is startReplicas with a DSN each: replicas on the nodes
// of a cluster.
func startReplicasOn(t *testing.T, dsns []string, env ...string) []*replica {
	t.Helper()
	rs := make([]*replica, len(dsns))
	for i, dsn := range dsns {
		rs[i] = startServe(t, string(rune('A'+i)), dsn, env...)
	}
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(time.Minute)
			for time.Now().Before(deadline) {
				if resp, err := http.Get(r.url + "/readyz"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						return
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Errorf("replica %s never became ready", r.name)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return rs
}

// startServe starts one serve process named name on dsn, without waiting
// for it; t's cleanup interrupts it (and logs it when t failed).
func startServe(t *testing.T, name, dsn string, env ...string) *replica {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(os.Args[0], "serve")
	r := &replica{name: name, url: "http://" + addr, logs: &bytes.Buffer{}, cmd: cmd}
	cmd.Env = append(os.Environ(), append([]string{"BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_DB=" + dsn, "BLINDEXEC_ADDR=" + addr,
		"BLINDEXEC_SPOOL_DIR=" + t.TempDir()}, env...)...)
	cmd.Stdout, cmd.Stderr = r.logs, r.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			t.Logf("replica %s log:\n%s", r.name, r.logs)
		}
	})
	return r
}

// startEngines starts n replicas on dsn as an operator runs them: one
// master key, the admin token, loopback upstreams allowed, the change
// counters polled every 100 ms; env adds settings.
func startEngines(t *testing.T, n int, dsn, admin string, env ...string) []*replica {
	t.Helper()
	return startReplicas(t, n, dsn, engineEnv(admin, env)...)
}

// engineEnv is the settings of startEngines.
func engineEnv(admin string, env []string) []string {
	key := make([]byte, 32)
	rand.Read(key)
	return append([]string{"BLINDEXEC_ADMIN_TOKEN=" + admin,
		"BLINDEXEC_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key),
		"BLINDEXEC_EGRESS_ALLOW=127.0.0.1", "BLINDEXEC_LOG_LEVEL=warn", "BLINDEXEC_CHANGE_POLL_MS=100"}, env...)
}

func (r *replica) do(t *testing.T, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, r.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("replica %s: %s %s: %v", r.name, method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// awaitPoll waits until replica r has polled counters at least as new as
// those in the database now: it waits for the poll, it does not time it.
func (r *replica) awaitPoll(t *testing.T, st *store.Store) {
	t.Helper()
	want, err := st.Versions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, body := r.do(t, "GET", "/readyz", "", nil)
		b, _ := json.Marshal(body["changes"])
		var got store.Versions
		if json.Unmarshal(b, &got) == nil && got.Plugins >= want.Plugins && got.Credentials >= want.Credentials &&
			got.Tokens >= want.Tokens && got.MCPServers >= want.MCPServers && got.QuotaRules >= want.QuotaRules &&
			got.Agents >= want.Agents {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("replica %s did not poll the counters %+v", r.name, want)
}

// openSQL opens the replicas' database beside them, for plain SQL: the
// store (closed with t) and a function that runs q or fails t.
func openSQL(t *testing.T, dsn string) (*store.Store, func(q string)) {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, func(q string) {
		t.Helper()
		if _, err := st.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplicasStayCoherent runs two engine processes on one database:
// both start together on a fresh database (one migrates, the other waits),
// and a change made through replica A's API, or with plain SQL, is seen by
// replica B after one poll of the change counters.
func TestReplicasStayCoherent(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		dsn := testdb.DSN(t, kind)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"Status":"200"}`)
		}))
		defer up.Close()
		const admin = "replica-admin-token"
		rs := startEngines(t, 2, dsn, admin)
		a, b := rs[0], rs[1]

		st, sql := openSQL(t, dsn)

		seed, err := os.ReadFile("../../plugins/testdata/seed001.jsonc")
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", a.url+"/v1/plugins", strings.NewReader(strings.Replace(string(seed), "http://api.qichacha.com", up.URL, 1)))
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("create plugin on A: %v %v", resp, err)
		}
		resp.Body.Close()
		code, created := a.do(t, "POST", "/v1/tokens", admin, map[string]any{"user_id": 7, "name": "replicas"})
		if code != http.StatusCreated {
			t.Fatalf("create token on A: %d %v", code, created)
		}
		tok := created["token"].(string)
		for k, v := range map[string]string{"QCC_KEY": "sk-replica-0123456789", "QCC_SECRET": "replica-secret-0123456789"} {
			if code, body := a.do(t, "PUT", "/v1/credentials/7/"+k, admin, map[string]string{"value": v}); code >= 300 {
				t.Fatalf("put credential on A: %d %v", code, body)
			}
		}
		exec := func() (int, string) {
			code, body := b.do(t, "POST", "/v1/execute", tok, map[string]any{"name": "search_company_basic", "arguments": map[string]any{"keyword": "x"}})
			return code, fmt.Sprint(body)
		}
		steps := []struct {
			name     string
			change   func()
			wantCode int
			wantText string
		}{
			{"created through A", func() {}, http.StatusOK, ""},
			{"disabled through A's API", func() {
				if code, _ := a.do(t, "PATCH", "/v1/plugins/search_company_basic", admin, map[string]string{"status": "1"}); code != http.StatusOK {
					t.Fatalf("disable on A: %d", code)
				}
			}, http.StatusConflict, "disabled"},
			{"enabled with plain SQL", func() { sql("UPDATE sys_ai_plugin SET status = '0' WHERE name = 'search_company_basic'") }, http.StatusOK, ""},
			{"a credential deleted through A's API", func() {
				if code, _ := a.do(t, "DELETE", "/v1/credentials/7/QCC_SECRET", admin, nil); code >= 300 {
					t.Fatalf("delete credential on A: %d", code)
				}
			}, http.StatusUnprocessableEntity, "QCC_SECRET"},
			{"a credential set again through A's API", func() {
				if code, _ := a.do(t, "PUT", "/v1/credentials/7/QCC_SECRET", admin, map[string]string{"value": "replica-secret-2"}); code >= 300 {
					t.Fatalf("put credential on A: %d", code)
				}
			}, http.StatusOK, ""},
			{"a credential deleted with plain SQL", func() {
				sql("DELETE FROM sys_user_credential WHERE user_id = 7 AND credential_key = 'QCC_KEY'")
			}, http.StatusUnprocessableEntity, "QCC_KEY"},
			{"the token revoked with plain SQL", func() { sql("DELETE FROM sys_ai_token") }, http.StatusUnauthorized, ""},
		}
		for _, s := range steps {
			s.change()
			b.awaitPoll(t, st)
			code, text := exec()
			if code != s.wantCode || !strings.Contains(text, s.wantText) {
				t.Errorf("%s: replica B answers %d %s; want %d naming %q", s.name, code, text, s.wantCode, s.wantText)
			}
		}
	})
}
