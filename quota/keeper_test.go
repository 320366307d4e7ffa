package quota_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/quota"
	"github.com/blindexec/blindexec/store"
)

var refund = &plugins.Plugin{Name: "refund", Catalog: true, Execution: plugins.Execution{Method: "POST"}}

// keeperOn is a replica's keeper of st's rules.
func keeperOn(t *testing.T, st *store.Store) *quota.Keeper {
	t.Helper()
	w := store.NewWatcher(st, time.Hour, nil)
	if _, err := w.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	return quota.New(st, w, nil, time.UTC, nil)
}

func addRule(t *testing.T, st *store.Store, r quota.Rule) {
	t.Helper()
	if err := st.CreateQuotaRule(t.Context(), r.Row()); err != nil {
		t.Fatal(err)
	}
}

// TestKeepersShareTheLimit: keepers on one database (replicas) hammering
// one user's limit admit exactly the limit together, small or large, once
// the leases left unspent are given back.
func TestKeepersShareTheLimit(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		seven := int64(7)
		for _, limit := range []int64{37, 1000, 2500} {
			name := fmt.Sprint("limit-", limit)
			addRule(t, st, quota.Rule{Name: name, UserID: &seven, Plugins: []string{"refund"}, Calls: limit, Window: quota.Day})
			keepers := []*quota.Keeper{keeperOn(t, st), keeperOn(t, st)}
			var admitted atomic.Int64
			hammer := func(calls int) {
				var wg sync.WaitGroup
				for i := range 8 {
					wg.Go(func() {
						k := keepers[i%2]
						for range calls / 8 {
							if _, err := k.Take(context.Background(), 7, refund); err == nil {
								admitted.Add(1)
							} else if _, ok := errors.AsType[*quota.ExceededError](err); !ok {
								t.Errorf("refusal: %v", err)
							}
						}
					})
				}
				wg.Wait()
			}
			hammer(int(limit) * 5 / 4)
			for _, k := range keepers {
				k.Tidy(t.Context(), true) // what each holds unspent, given back
			}
			// Past the recheck, the other replica leases what was given back.
			for _, k := range keepers {
				k.Now = func() time.Time { return time.Now().Add(quota.Recheck) }
			}
			hammer(int(limit)/4 + 16)
			if got := admitted.Load(); got != limit {
				t.Errorf("limit %d: %d admitted", limit, got)
			}
			// The next limit is another rule, on fresh replicas.
			if err := st.DeleteQuotaRule(t.Context(), name); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestOutageSpendsWhatIsHeld: with the database gone, a replica spends the
// lease it holds, then refuses (no grace), and says why.
func TestOutageSpendsWhatIsHeld(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	addRule(t, st, quota.Rule{Name: "all", Calls: 1000, Window: quota.Day}) // leases of 10
	k := keeperOn(t, st)
	if _, err := k.Take(t.Context(), 7, refund); err != nil {
		t.Fatal(err)
	}
	st.Close() // the outage
	for i := range 9 {
		if _, err := k.Take(t.Context(), 7, refund); err != nil {
			t.Fatalf("call %d of the lease held: %v", i+2, err)
		}
	}
	_, err := k.Take(t.Context(), 7, refund)
	if _, ok := errors.AsType[*quota.UnavailableError](err); !ok {
		t.Fatalf("past the lease during an outage: %v, want an UnavailableError", err)
	}
}

// TestUndoAndNoUser: a call given back (nothing sent) does not count;
// calls naming no user count as user 0's; a rule for another user does
// not apply.
func TestUndoAndNoUser(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	zero, eight := int64(0), int64(8)
	addRule(t, st, quota.Rule{Name: "anon", UserID: &zero, Calls: 2, Window: quota.Minute})
	addRule(t, st, quota.Rule{Name: "eight", UserID: &eight, Calls: 1, Window: quota.Minute})
	k := keeperOn(t, st)
	now := time.Date(2026, 11, 27, 10, 0, 30, 0, time.UTC) // mid-minute: no window edge in the test
	k.Now = func() time.Time { return now }
	undo, err := k.Take(t.Context(), 0, refund)
	if err != nil {
		t.Fatal(err)
	}
	undo()
	for i := range 2 {
		if _, err := k.Take(t.Context(), 0, refund); err != nil {
			t.Fatalf("call %d of user 0: %v", i+1, err)
		}
	}
	if _, err := k.Take(t.Context(), 0, refund); err == nil {
		t.Fatal("user 0's third call admitted")
	}
	for range 3 {
		if _, err := k.Take(t.Context(), 7, refund); err != nil {
			t.Fatalf("user 7 has no rule: %v", err)
		}
	}
	// The next minute is a new window.
	now = now.Add(time.Minute)
	if _, err := k.Take(t.Context(), 0, refund); err != nil {
		t.Fatalf("next window: %v", err)
	}
}

// TestTakeAllocates: counting a call under a rule holding a lease
// allocates nothing.
func TestTakeAllocates(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	addRule(t, st, quota.Rule{Name: "big", Calls: 1_000_000, Window: quota.Day})
	k := keeperOn(t, st)
	ctx := context.Background()
	if _, err := k.Take(ctx, 7, refund); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { k.Take(ctx, 7, refund) }); n != 0 {
		t.Errorf("Take allocates %.1f times a call", n)
	}
}

// BenchmarkTake is the cost of counting one call under one rule, from 1
// to GOMAXPROCS goroutines on one user's bucket.
func BenchmarkTake(b *testing.B) {
	st := testdb.Open(b, "sqlite")
	if err := st.CreateQuotaRule(b.Context(), (&quota.Rule{Name: "big", Calls: 1 << 50, Window: quota.Day}).Row()); err != nil {
		b.Fatal(err)
	}
	w := store.NewWatcher(st, time.Hour, nil)
	w.Poll(b.Context())
	k := quota.New(st, w, nil, time.UTC, nil)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := k.Take(ctx, 7, refund); err != nil {
				b.Fatal(err)
			}
		}
	})
}
