package store_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// logs are the watchers' logs, one buffer each.
type watcherLogs []*bytes.Buffer

func (l watcherLogs) String() string {
	var all strings.Builder
	for _, b := range l {
		all.WriteString(b.String())
	}
	return all.String()
}

// replicas opens n stores (connection pools of their own) on one migrated
// database, each with a watcher logging into its buffer of the logs.
func replicas(t *testing.T, kind string, n int) ([]*store.Store, []*store.Watcher, watcherLogs) {
	t.Helper()
	dsn := testdb.DSN(t, kind)
	var (
		logs     watcherLogs
		stores   []*store.Store
		watchers []*store.Watcher
	)
	for i := range n {
		st := testdb.At(t, dsn)
		if i == 0 {
			if err := st.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		logs = append(logs, &bytes.Buffer{})
		w := store.NewWatcher(st, time.Hour, slog.New(slog.NewTextHandler(logs[i], nil)))
		if _, err := w.Poll(t.Context()); err != nil {
			t.Fatal(err)
		}
		stores, watchers = append(stores, st), append(watchers, w)
	}
	return stores, watchers, logs
}

func execSQL(t *testing.T, st *store.Store, q string, args ...any) {
	t.Helper()
	if _, err := st.DB().ExecContext(t.Context(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestCounterRowsDeleted: after DELETE FROM sys_ai_change, the triggers
// bump nothing. Two replicas polling at once both recreate the rows without
// failing, at a new generation none of them held, and later writes move
// the counters again.
func TestCounterRowsDeleted(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		stores, ws, logs := replicas(t, kind, 2)
		a := stores[0]
		if err := a.CreateToken(t.Context(), &store.Token{UserID: 7, Name: "t", Hash: strings.Repeat("a", 64)}); err != nil {
			t.Fatal(err)
		}
		held := make([]store.Versions, len(ws))
		for i, w := range ws {
			if held[i], _ = w.Poll(t.Context()); held[i].Tokens != 1 {
				t.Fatalf("replica %d: tokens counter %d, want 1", i, held[i].Tokens)
			}
		}

		execSQL(t, a, "DELETE FROM sys_ai_change")
		if _, err := a.Versions(t.Context()); err == nil || !strings.Contains(err.Error(), "missing from sys_ai_change: plugin, credential, token, mcp_server") {
			t.Fatalf("Versions with the rows deleted: err = %v", err)
		}
		// The revocation the deleted rows would have hidden.
		execSQL(t, a, "DELETE FROM sys_ai_token")

		got := make([]store.Versions, len(ws))
		errs := make([]error, len(ws))
		var wg sync.WaitGroup
		for i, w := range ws {
			wg.Go(func() { got[i], errs[i] = w.Poll(t.Context()) })
		}
		wg.Wait()
		for i := range ws {
			if errs[i] != nil {
				t.Fatalf("replica %d: poll after the delete: %v", i, errs[i])
			}
			if got[i].Tokens < 1<<52 || got[i].Plugins < 1<<52 || got[i].Credentials < 1<<52 || got[i].MCPServers < 1<<52 {
				t.Errorf("replica %d: counters %+v, want each at a new generation (from 2^52)", i, got[i])
			}
			if got[i].Tokens == held[i].Tokens {
				t.Errorf("replica %d: tokens counter %d unchanged: its caches would not reload", i, got[i].Tokens)
			}
		}
		if !strings.Contains(logs.String(), "change counter rows were missing") {
			t.Errorf("recreation not logged:\n%s", logs)
		}
		// The triggers count again.
		before, _ := ws[1].Poll(t.Context())
		if err := a.CreateToken(t.Context(), &store.Token{UserID: 7, Name: "u", Hash: strings.Repeat("b", 64)}); err != nil {
			t.Fatal(err)
		}
		if after, _ := ws[1].Poll(t.Context()); after.Tokens != before.Tokens+1 {
			t.Errorf("a token created after the recreation: counter %d -> %d, want one more", before.Tokens, after.Tokens)
		}
	})
}

// TestCounterTriggersAudited: a dropped trigger is found by the audit
// (Problem, and logged), the write it would have counted is caught by the
// table's fingerprint, and Migrate puts the trigger back.
func TestCounterTriggersAudited(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		stores, ws, logs := replicas(t, kind, 2)
		a, b := stores[0], ws[1]
		if a.ChangeDetection() == store.ChangePoll {
			t.Skip("poll mode: there is no trigger to drop (TestPollModeSeesWrites audits it)")
		}
		if err := a.CreateToken(t.Context(), &store.Token{UserID: 7, Name: "t", Hash: strings.Repeat("a", 64)}); err != nil {
			t.Fatal(err)
		}
		if err := b.Audit(t.Context()); err != nil || b.Problem() != nil {
			t.Fatalf("audit of an intact database: err %v, problem %v", err, b.Problem())
		}
		execSQL(t, a, "DROP TRIGGER trg_sys_ai_token_delete")
		execSQL(t, a, "DROP TRIGGER trg_sys_ai_token_update") // one written as a BEGIN … END block
		before, _ := b.Poll(t.Context())
		execSQL(t, a, "DELETE FROM sys_ai_token")
		if v, _ := b.Poll(t.Context()); v != before {
			t.Fatalf("the delete moved the counters without its trigger: %+v -> %+v", before, v)
		}
		if err := b.Audit(t.Context()); err != nil {
			t.Fatal(err)
		}
		if p := b.Problem(); p == nil || !strings.Contains(p.Error(), "trg_sys_ai_token_delete") || !strings.Contains(p.Error(), "blindexec migrate") {
			t.Errorf("Problem() = %v, want the dropped trigger named and migrate advised", p)
		}
		if after := b.Current(); after.Tokens == before.Tokens {
			t.Errorf("a delete no trigger saw: tokens counter still %d, want it bumped", after.Tokens)
		}
		for _, want := range []string{"change counter triggers missing", "tables changed without moving their change counter"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("log lacks %q:\n%s", want, logs)
			}
		}

		if err := a.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := b.Audit(t.Context()); err != nil || b.Problem() != nil {
			t.Fatalf("audit after migrate: err %v, problem %v", err, b.Problem())
		}
		// The recreated trigger counts.
		before, _ = b.Poll(t.Context())
		if err := a.CreateToken(t.Context(), &store.Token{UserID: 7, Name: "u", Hash: strings.Repeat("b", 64)}); err != nil {
			t.Fatal(err)
		}
		execSQL(t, a, "DELETE FROM sys_ai_token")
		if after, _ := b.Poll(t.Context()); after.Tokens != before.Tokens+2 {
			t.Errorf("insert and delete after migrate: counter %d -> %d, want two more", before.Tokens, after.Tokens)
		}
		tok := &store.Token{UserID: 7, Name: "v", Hash: strings.Repeat("c", 64)}
		if err := a.CreateToken(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
		before, _ = b.Poll(t.Context())
		execSQL(t, a, "UPDATE sys_ai_token SET expire_time = '2031-01-01 00:00:00'")
		if after, _ := b.Poll(t.Context()); after.Tokens != before.Tokens+1 {
			t.Errorf("an update after migrate: counter %d -> %d, want one more", before.Tokens, after.Tokens)
		}
		// Bookkeeping writes move no fingerprint: no false alarm.
		b.Poll(t.Context())
		b.Audit(t.Context())
		if err := a.TouchToken(t.Context(), tok.ID, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		before, _ = b.Poll(t.Context())
		if err := b.Audit(t.Context()); err != nil {
			t.Fatal(err)
		}
		if after := b.Current(); after != before {
			t.Errorf("a token's use was taken for an unseen write: %+v -> %+v", before, after)
		}
	})
}

// TestTruncateCaught: TRUNCATE TABLE fires no trigger (MySQL and MariaDB;
// SQLite has none). The next audit finds the table's fingerprint moved
// under an unmoved counter and bumps it.
func TestTruncateCaught(t *testing.T) {
	stores, ws, _ := replicas(t, store.DialectMySQL, 2)
	a, b := stores[0], ws[1]
	for _, h := range []string{"a", "b"} {
		if err := a.CreateToken(t.Context(), &store.Token{UserID: 7, Name: h, Hash: strings.Repeat(h, 64)}); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := b.Poll(t.Context())
	if err := b.Audit(t.Context()); err != nil {
		t.Fatal(err)
	}
	execSQL(t, a, "TRUNCATE TABLE sys_ai_token")
	if v, _ := b.Poll(t.Context()); v != before {
		t.Fatalf("TRUNCATE moved the counters: %+v -> %+v", before, v)
	}
	if err := b.Audit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if after := b.Current(); after.Tokens != before.Tokens+1 || after.Plugins != before.Plugins {
		t.Errorf("after TRUNCATE and an audit: %+v, want only the tokens counter bumped from %+v", after, before)
	}
	if b.Problem() != nil {
		t.Errorf("Problem() = %v after a TRUNCATE: the triggers are all there", b.Problem())
	}
}

// operator75: a replica started with --no-migrate on a database that is
// being migrated (a migration job beside new replicas) put back the counter
// rows of scopes whose migrations had not run yet, so the migration that
// inserts them (00011's quota_rule) failed half-way — on MySQL with its
// table created, so every later `migrate` failed too ("Table
// 'sys_ai_quota_rule' already exists"). A watcher recreates rows only on a
// schema that is up to date.
func TestCountersNotRecreatedOnAPartlyMigratedSchema(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		st := testdb.Unmigrated(t, kind)
		if err := st.MigrateUpTo(t.Context(), 10); err != nil { // sys_ai_change without quota_rule
			t.Fatal(err)
		}
		var logs bytes.Buffer
		w := store.NewWatcher(st, time.Hour, slog.New(slog.NewTextHandler(&logs, nil)))
		w.Poll(t.Context()) // fails, as a not-ready replica's polls do
		if strings.Contains(logs.String(), "recreated") {
			t.Errorf("the watcher says it recreated rows it left alone:\n%s", &logs)
		}
		if err := st.Migrate(t.Context()); err != nil {
			t.Fatalf("migrating after a replica's poll of the partly migrated schema: %v", err)
		}
		if _, err := w.Poll(t.Context()); err != nil {
			t.Errorf("poll after the migration: %v", err)
		}
	})
}
