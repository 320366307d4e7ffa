package store_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestBlackholedPrepareBounded: with the database blackholed
// (connections open, nothing answered), the first use of a statement
// prepares it once for every caller, and the others of that statement
// wait for that preparation whatever their own deadline (gorm's
// statement cache): a first caller without a deadline held them all for
// as long as the connection lived. The preparation is bounded by
// store.QueryTimeout, so another caller's read is decided within it.
func TestBlackholedPrepareBounded(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	st := testdb.At(t, through)
	proxy.Blackhole()
	// The test's own bound: the code under test's must come well before.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	go st.ListQuotaRules(ctx) // the first use: no deadline of its own but the test's
	time.Sleep(200 * time.Millisecond)
	short, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	began := time.Now()
	_, err := st.ListQuotaRules(short)
	if took, bound := time.Since(began), store.QueryTimeout+2*time.Second; took > bound || err == nil {
		t.Errorf("a read behind another's preparation: %v after %v, want an error within %v", err, took, bound)
	}
}

// TestBlackholedBeginBounded: with the database blackholed, beginning a
// transaction — gorm's (ExpireRuns) and the store's own on the pool
// (AuditChanges) — waited on the connection whatever bounded the
// statements after it: a caller without a deadline of its own (a
// background sweep, a route's request) was held for as long as the
// connection lived. The beginning is bounded by store.QueryTimeout.
func TestBlackholedBeginBounded(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	st := testdb.At(t, through)
	proxy.Blackhole()
	for name, begin := range map[string]func(context.Context) error{
		"gorm's":     func(ctx context.Context) error { _, err := st.ExpireRuns(ctx); return err },
		"the pool's": func(ctx context.Context) error { _, err := st.AuditChanges(ctx); return err },
	} {
		t.Run(name, func(t *testing.T) {
			// The test's own bound: the code under test's must come well before.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			began := time.Now()
			err := begin(ctx)
			if took, bound := time.Since(began), store.QueryTimeout+2*time.Second; took > bound || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a transaction begun blackholed: %v after %v, want a deadline's error within %v", err, took, bound)
			}
		})
	}
}

// TestBlackholedRawStatementsBounded: the statements the store sends on
// the pool outside gorm (the embeddings' and search requests' reads and
// writes, the recorder's inserts, the change counters' read and bump,
// the quota's uses) and in its own transactions took their caller's
// context only: with the database blackholed, a caller without a
// deadline (the recorder's spool, a background loop) waited for as long
// as the connection lived. Each is bounded by store.QueryTimeout.
func TestBlackholedRawStatementsBounded(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	st := testdb.At(t, through)
	k := store.QuotaKey{Rule: 1, User: 7, WindowStart: 1}
	if err := st.ReturnQuota(t.Context(), k, 1); err != nil { // the statement's first use, answered
		t.Fatal(err)
	}
	proxy.Blackhole()
	for name, send := range map[string]func(context.Context) error{
		"Vectors":        func(ctx context.Context) error { _, err := st.Vectors(ctx, "m"); return err },
		"SaveVectors":    func(ctx context.Context) error { return st.SaveVectors(ctx, "m", map[string][]float32{"h": {1}}) },
		"SearchRequests": func(ctx context.Context) error { _, err := st.SearchRequests(ctx, "m"); return err },
		"SaveSearchRequests": func(ctx context.Context) error {
			return st.SaveSearchRequests(ctx, "m", map[string][]string{"h": {"q"}})
		},
		"InsertExecutions": func(ctx context.Context) error {
			return st.InsertExecutions(ctx, []store.Execution{{PluginName: "p"}, {PluginName: "q"}})
		},
		"Versions":     func(ctx context.Context) error { _, err := st.Versions(ctx); return err },
		"BumpCounters": func(ctx context.Context) error { return st.BumpCounters(ctx, "plugin") },
		"ReturnQuota":  func(ctx context.Context) error { return st.ReturnQuota(ctx, k, 1) },
		"QuotaUsed":    func(ctx context.Context) error { _, err := st.QuotaUsed(ctx, k); return err },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The test's own bound: the code under test's must come well before.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			began := time.Now()
			err := send(ctx)
			if took, bound := time.Since(began), store.QueryTimeout+2*time.Second; took > bound || err == nil {
				t.Errorf("sent blackholed: %v after %v, want an error within %v", err, took, bound)
			}
		})
	}
}

// TestBlackholedCommitBounded (leftovers76): database/sql sends COMMIT
// with no context and the DSN sets no readTimeout, so a database that
// stopped answering between a transaction's statements (answered) and
// its COMMIT held the caller for as long as the connection lived. The
// COMMIT is bounded by store.QueryTimeout, its error a deadline's, and
// the connection it was cut on is not used again. The same for a
// ROLLBACK (leftovers78: a transaction given up for a reason of the
// engine's own, its statements answered; before: no answer after 20 s).
func TestBlackholedCommitBounded(t *testing.T) {
	for name, end := range map[string]func(*sql.Tx) error{"COMMIT": (*sql.Tx).Commit, "ROLLBACK": (*sql.Tx).Rollback} {
		t.Run(name, func(t *testing.T) {
			_, proxy, through := testdb.Blackholable(t)
			st := testdb.At(t, through)
			tx, err := st.DB().BeginTx(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(t.Context(), "UPDATE sys_ai_change SET version = version WHERE scope = 'plugin'"); err != nil {
				t.Fatal(err)
			}
			proxy.Blackhole()
			ended := make(chan error, 1)
			began := time.Now()
			go func() { ended <- end(tx) }()
			// The test's own bound: the code under test's must come well before.
			select {
			case err = <-ended:
			case <-time.After(20 * time.Second):
				proxy.Refuse() // the connection closed: the statement returns
				err = <-ended
				t.Fatalf("a %s blackholed: no answer after 20 s (then %v)", name, err)
			}
			if took, bound := time.Since(began), store.QueryTimeout+2*time.Second; took > bound || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a %s blackholed: %v after %v, want a deadline's error within %v", name, err, took, bound)
			}
			proxy.Refuse() // the partition ends: the held connections go
			if err := proxy.Restore(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if _, err := st.Versions(ctx); err != nil {
				t.Errorf("the pool after a %s cut: %v", name, err)
			}
		})
	}
}
