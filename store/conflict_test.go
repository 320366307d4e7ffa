package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// eagerPair is two replicas' stores on one fresh MySQL database: the
// first waits for row locks as configured, the second never does
// (testdb.NoWait).
func eagerPair(t *testing.T) (patient, eager *store.Store) {
	t.Helper()
	dsn := testdb.DSN(t, store.DialectMySQL)
	patient = testdb.At(t, dsn)
	if err := patient.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return patient, testdb.NoWait(t, dsn)
}

// TestDeadlockIsAConflict: a real deadlock of two transactions on InnoDB
// (the error Galera's certification failure shares) is classified as
// ErrConflict; the other transaction goes on.
func TestDeadlockIsAConflict(t *testing.T) {
	st, _ := eagerPair(t)
	ctx := t.Context()
	for _, k := range []store.QuotaKey{{Rule: 1, User: 1}, {Rule: 1, User: 2}} {
		if _, _, err := st.LeaseQuota(ctx, k, 10, 1); err != nil {
			t.Fatal(err)
		}
	}
	const lockRow = "UPDATE sys_ai_quota_use SET used = used + 1 WHERE rule_id = 1 AND user_id = ?"
	begin := func(first int64) *sql.Tx {
		tx, err := st.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, lockRow, first); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	a, b := begin(1), begin(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		_, errs[0] = a.ExecContext(ctx, lockRow, 2) // waits for b
		a.Rollback()
	})
	time.Sleep(200 * time.Millisecond)
	_, errs[1] = b.ExecContext(ctx, lockRow, 1) // closes the cycle
	b.Rollback()
	wg.Wait()
	var conflicts int
	for _, err := range errs {
		if err != nil {
			conflicts++
			if !errors.Is(store.Classify(err), store.ErrConflict) {
				t.Errorf("deadlock %v: not classified as a conflict", err)
			}
		}
	}
	if conflicts != 1 {
		t.Errorf("%d of the two transactions failed (%v), want the deadlock's one victim", conflicts, errs)
	}
	// TiDB's write conflict, which no server here raises.
	if !errors.Is(store.Classify(fmt.Errorf("commit: %w", &mysqldrv.MySQLError{Number: 9007, Message: "Write conflict"})), store.ErrConflict) {
		t.Error("TiDB's write conflict (9007) not classified as a conflict")
	}
	if errors.Is(store.Classify(&mysqldrv.MySQLError{Number: 1062}), store.ErrConflict) {
		t.Error("a duplicate key classified as a conflict")
	}
	if errors.Is(store.Classify(sql.ErrNoRows), store.ErrConflict) || errors.Is(store.Classify(sql.ErrConnDone), store.ErrConflict) {
		t.Error("an error other than a deadlock or lock wait timeout classified as a conflict")
	}
}

// TestClaimLostToAConflict: a claim of a row another writer is changing
// (uncommitted, so that every try conflicts) reports that it did not win,
// with no error — the resume that lost answers 409, not 500 — and the
// other writer's change stands.
func TestClaimLostToAConflict(t *testing.T) {
	patient, eager := eagerPair(t)
	ctx := t.Context()
	cases := []struct {
		name, status, other string
		claim               func(id string) (bool, error)
	}{
		{"decide", store.PendingWaiting, "denied", func(id string) (bool, error) {
			return eager.DecideItem(ctx, id, "approved", "user:7", "")
		}},
		{"claim approved", "approved", store.PendingSent, func(id string) (bool, error) { return eager.ClaimApproved(ctx, id) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := pendingItem("conflict-"+strings.ReplaceAll(c.name, " ", "-"), 7, `{}`)
			if err := patient.CreatePendingItem(ctx, it); err != nil {
				t.Fatal(err)
			}
			if _, err := patient.DB().ExecContext(ctx, "UPDATE sys_ai_run_pending SET status = ? WHERE pending_id = ?", c.status, it.ID); err != nil {
				t.Fatal(err)
			}
			other, err := patient.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback()
			if _, err := other.ExecContext(ctx, "UPDATE sys_ai_run_pending SET status = ? WHERE pending_id = ?", c.other, it.ID); err != nil {
				t.Fatal(err)
			}
			won, err := c.claim(it.ID)
			if err != nil || won {
				t.Fatalf("claim during another's write: won %v, err %v; want false, nil", won, err)
			}
			if err := other.Commit(); err != nil {
				t.Fatal(err)
			}
			got, err := patient.GetPendingItem(ctx, it.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != c.other {
				t.Errorf("status %q, want the other writer's %q", got.Status, c.other)
			}
			// Uncontended, the same claim of a fresh item wins.
			fresh := pendingItem(it.ID+"-fresh", 8, `{}`)
			if err := patient.CreatePendingItem(ctx, fresh); err != nil {
				t.Fatal(err)
			}
			patient.DB().ExecContext(ctx, "UPDATE sys_ai_run_pending SET status = ? WHERE pending_id = ?", c.status, fresh.ID)
			if won, err := c.claim(fresh.ID); err != nil || !won {
				t.Errorf("uncontended claim: won %v, err %v", won, err)
			}
		})
	}
}

// TestLeaseUnderConflicts: replicas whose every concurrent lease of one
// window conflicts (as on Galera) admit exactly the limit together (30
// leases at once: ten times what three keepers, which lease a window one
// at a time each, ever make), and
// refuse the rest for the limit (0 granted), never with an error; a
// window that still conflicts after the tries is refused for the limit
// when it is spent, and fails with ErrConflict when it is not.
func TestLeaseUnderConflicts(t *testing.T) {
	patient, eager := eagerPair(t)
	ctx := t.Context()
	const limit, calls = 50, 150
	k := store.QuotaKey{Rule: 9, User: 7, WindowStart: 1}
	var granted, refused atomic.Int64
	var wg sync.WaitGroup
	const lessees = 30
	for i := range lessees {
		wg.Go(func() {
			st := eager
			if i%3 == 0 {
				st = patient
			}
			for range calls / lessees {
				g, _, err := st.LeaseQuota(ctx, k, limit, 1)
				switch {
				case err != nil:
					t.Errorf("lease: %v", err)
				case g == 0:
					refused.Add(1)
				}
				granted.Add(g)
			}
		})
	}
	wg.Wait()
	if granted.Load() != limit || refused.Load() != calls-limit {
		t.Errorf("%d granted, %d refused of %d calls; want %d and %d", granted.Load(), refused.Load(), calls, limit, calls-limit)
	}

	// The row locked by a writer that never lets go within the tries.
	hold := func(t *testing.T) {
		tx, err := patient.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback() })
		if _, err := tx.ExecContext(ctx, "SELECT used FROM sys_ai_quota_use WHERE rule_id = ? AND user_id = ? AND window_start = ? FOR UPDATE", k.Rule, k.User, k.WindowStart); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("spent", func(t *testing.T) {
		hold(t)
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if g, used, err := eager.LeaseQuota(tctx, k, limit, 1); err != nil || g != 0 || used != limit {
			t.Errorf("lease of a spent window under conflict: granted %d, used %d, err %v; want 0, %d, nil", g, used, err, limit)
		}
	})
	t.Run("not spent", func(t *testing.T) {
		hold(t)
		if g, _, err := eager.LeaseQuota(ctx, k, limit+10, 1); !errors.Is(err, store.ErrConflict) || g != 0 {
			t.Errorf("lease of an open window under conflict: granted %d, err %v; want 0 and ErrConflict", g, err)
		}
	})
}
