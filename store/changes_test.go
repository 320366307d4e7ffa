package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestChangeCounters checks that every writer moves the counter of what it
// wrote, the engine's writes and plain SQL alike, and that bookkeeping
// updates do not.
func TestChangeCounters(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		db := s.DB()
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := db.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		tok := &store.Token{UserID: 7, Name: "t", Hash: strings.Repeat("a", 64)}
		srv := &store.MCPServer{Name: "m", Transport: store.TransportStreamableHTTP, URL: "https://mcp.example.com/mcp"}
		steps := []struct {
			name string
			do   func()
			want func(v *store.Versions) *int64 // the counter that must move; nil: none
		}{
			{"engine creates a plugin", func() {
				if err := s.CreatePlugin(ctx, &store.Plugin{Name: "p1", Status: store.StatusEnabled}); err != nil {
					t.Fatal(err)
				}
			}, func(v *store.Versions) *int64 { return &v.Plugins }},
			{"SQL disables a plugin", func() { exec("UPDATE sys_ai_plugin SET status = '1' WHERE name = 'p1'") },
				func(v *store.Versions) *int64 { return &v.Plugins }},
			{"SQL inserts a plugin", func() {
				exec("INSERT INTO sys_ai_plugin (name, status) VALUES ('p2', '0')")
			}, func(v *store.Versions) *int64 { return &v.Plugins }},
			{"SQL deletes a plugin", func() { exec("DELETE FROM sys_ai_plugin WHERE name = 'p2'") },
				func(v *store.Versions) *int64 { return &v.Plugins }},
			{"engine stores a credential", func() {
				if err := s.PutCredential(ctx, &store.Credential{UserID: 7, Key: "K", Value: "v1:x:y", KeyID: "x"}); err != nil {
					t.Fatal(err)
				}
			}, func(v *store.Versions) *int64 { return &v.Credentials }},
			{"SQL writes a credential", func() {
				exec("INSERT INTO sys_user_credential (user_id, credential_key, credential_value, key_id) VALUES (8, 'K', 'v1:x:y', 'x')")
			}, func(v *store.Versions) *int64 { return &v.Credentials }},
			{"SQL deletes a credential", func() { exec("DELETE FROM sys_user_credential WHERE user_id = 8") },
				func(v *store.Versions) *int64 { return &v.Credentials }},
			{"engine creates a token", func() {
				if err := s.CreateToken(ctx, tok); err != nil {
					t.Fatal(err)
				}
			}, func(v *store.Versions) *int64 { return &v.Tokens }},
			{"a token is used", func() {
				if err := s.TouchToken(ctx, tok.ID, time.Now()); err != nil {
					t.Fatal(err)
				}
			}, nil},
			{"SQL expires a token", func() { exec("UPDATE sys_ai_token SET expire_time = ? WHERE token_id = ?", time.Now().UTC(), tok.ID) },
				func(v *store.Versions) *int64 { return &v.Tokens }},
			{"engine revokes a token", func() {
				if err := s.DeleteToken(ctx, tok.ID); err != nil {
					t.Fatal(err)
				}
			}, func(v *store.Versions) *int64 { return &v.Tokens }},
			{"engine registers an MCP server", func() {
				if err := s.CreateMCPServer(ctx, srv); err != nil {
					t.Fatal(err)
				}
			}, func(v *store.Versions) *int64 { return &v.MCPServers }},
			{"its tool list is cached", func() {
				if err := s.UpdateMCPToolsCache(ctx, srv.ID, store.JSON(`[]`), time.Now()); err != nil {
					t.Fatal(err)
				}
			}, nil},
			{"SQL disables the MCP server", func() { exec("UPDATE sys_ai_mcp_server SET status = '1' WHERE mcp_id = ?", srv.ID) },
				func(v *store.Versions) *int64 { return &v.MCPServers }},
			{"engine adds a quota rule", func() {
				calls := int64(5)
				if err := s.CreateQuotaRule(ctx, &store.QuotaRule{Name: "r1", Consequential: "0", Calls: &calls, Window: "day"}); err != nil {
					t.Fatal(err)
				}
			}, func(v *store.Versions) *int64 { return &v.QuotaRules }},
			{"a quota lease is taken", func() {
				if _, _, err := s.LeaseQuota(ctx, store.QuotaKey{Rule: 1, User: 7, WindowStart: 1}, 5, 2); err != nil {
					t.Fatal(err)
				}
			}, nil},
			{"SQL changes a quota rule", func() { exec("UPDATE sys_ai_quota_rule SET calls = 6 WHERE rule_name = 'r1'") },
				func(v *store.Versions) *int64 { return &v.QuotaRules }},
			{"engine deletes a quota rule", func() {
				if err := s.DeleteQuotaRule(ctx, "r1"); err != nil {
					t.Fatal(err)
				}
			}, func(v *store.Versions) *int64 { return &v.QuotaRules }},
			{"an execution is recorded", func() {
				if err := s.InsertExecutions(ctx, []store.Execution{{ID: "00000000-0000-0000-0000-000000000001", PluginName: "p1", Status: "ok", CreateTime: time.Now()}}); err != nil {
					t.Fatal(err)
				}
			}, nil},
		}
		before, err := s.Versions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range steps {
			st.do()
			after, err := s.Versions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := before
			// Without triggers, plain SQL moves nothing until an audit
			// (TestPollModeSeesWrites).
			sqlUnseen := s.ChangeDetection() == store.ChangePoll && strings.HasPrefix(st.name, "SQL ")
			if st.want != nil && !sqlUnseen {
				*st.want(&want)++
			}
			if after != want {
				t.Errorf("%s: counters %+v, want %+v", st.name, after, want)
			}
			before = after
		}
	})
}

type flakySource struct {
	mu  sync.Mutex
	v   store.Versions
	err error
}

func (f *flakySource) Versions(context.Context) (store.Versions, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.v, f.err
}

func (f *flakySource) set(v store.Versions, err error) {
	f.mu.Lock()
	f.v, f.err = v, err
	f.mu.Unlock()
}

func TestWatcher(t *testing.T) {
	ctx := context.Background()
	src := &flakySource{}
	var logs bytes.Buffer
	w := store.NewWatcher(src, time.Hour, slog.New(slog.NewTextHandler(&logs, nil)))
	var moves []string
	w.OnChange(func(old, new store.Versions) { moves = append(moves, fmt.Sprintf("%d->%d", old.Plugins, new.Plugins)) })

	if _, err := w.Poll(ctx); err != nil || len(moves) != 0 || w.LastRead().IsZero() {
		t.Fatalf("first poll of zero counters: err %v, moves %v, last read %v", err, moves, w.LastRead())
	}
	src.set(store.Versions{Plugins: 3}, nil)
	w.Poll(ctx)
	w.Poll(ctx)
	if got := w.Current(); got.Plugins != 3 || strings.Join(moves, ",") != "0->3" {
		t.Fatalf("after a move: current %+v, moves %v; want 3 and one move", got, moves)
	}

	// A failing database keeps what was read, and says so once.
	read := w.LastRead()
	src.set(store.Versions{}, errors.New("connection refused"))
	for range 3 {
		if _, err := w.Poll(ctx); err == nil {
			t.Fatal("Poll of a failing source: no error")
		}
	}
	if got := w.Current(); got.Plugins != 3 || !w.LastRead().Equal(read) {
		t.Errorf("during a failure: current %+v, last read %v; want the last read kept", got, w.LastRead())
	}
	src.set(store.Versions{Plugins: 4}, nil)
	w.Poll(ctx)
	if n := strings.Count(logs.String(), "cannot read the change counters"); n != 1 {
		t.Errorf("failure logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "readable again") || w.Current().Plugins != 4 {
		t.Errorf("recovery not logged or not read: %+v\n%s", w.Current(), logs.String())
	}
}

// envMigrateDSN hands a database to TestMigrateHelperProcess.
const envMigrateDSN = "BLINDEXEC_TEST_MIGRATE_DSN"

// TestMigrateHelperProcess is one of the processes TestMigrateConcurrently
// starts: it opens and migrates, as `serve` does.
func TestMigrateHelperProcess(t *testing.T) {
	dsn := os.Getenv(envMigrateDSN)
	if dsn == "" {
		t.Skip("a helper process of TestMigrateConcurrently")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Versions(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateConcurrently starts processes together on one fresh database:
// one migrates, the others wait, and every one comes up.
func TestMigrateConcurrently(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		dsn := testdb.DSN(t, kind)
		const n = 4
		errs := make(chan error, n)
		for range n {
			go func() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestMigrateHelperProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(), envMigrateDSN+"="+dsn)
				out, err := cmd.CombinedOutput()
				if err != nil {
					err = fmt.Errorf("%v:\n%s", err, out)
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Errorf("a process failed to come up: %v", err)
			}
		}
		ctx := context.Background()
		s, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var applied, distinct int
		if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*), COUNT(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0").Scan(&applied, &distinct); err != nil {
			t.Fatal(err)
		}
		if applied != distinct || applied < 4 {
			t.Errorf("goose_db_version holds %d applications of %d migrations; want each once, at least 4", applied, distinct)
		}
	})
}

// TestLeaseQuota: leases never pass the limit, the last one is partial,
// and what is given back can be leased again.
func TestLeaseQuota(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		k := store.QuotaKey{Rule: 3, User: 7, WindowStart: 1000}
		for _, step := range []struct {
			want, granted, used int64
		}{{4, 4, 4}, {4, 4, 8}, {4, 2, 10}, {4, 0, 10}} {
			g, u, err := s.LeaseQuota(ctx, k, 10, step.want)
			if err != nil || g != step.granted || u != step.used {
				t.Fatalf("lease %d: granted %d, used %d, %v; want %d, %d", step.want, g, u, err, step.granted, step.used)
			}
		}
		if err := s.ReturnQuota(ctx, k, 3); err != nil {
			t.Fatal(err)
		}
		if u, err := s.QuotaUsed(ctx, k); err != nil || u != 7 {
			t.Fatalf("used after giving 3 back = %d, %v; want 7", u, err)
		}
		if g, _, err := s.LeaseQuota(ctx, k, 10, 5); err != nil || g != 3 {
			t.Fatalf("lease after give-back: %d, %v; want 3", g, err)
		}
		if err := s.PruneQuotaUse(ctx, 1001); err != nil {
			t.Fatal(err)
		}
		if u, _ := s.QuotaUsed(ctx, k); u != 0 {
			t.Fatalf("used after pruning = %d", u)
		}
	})
}
