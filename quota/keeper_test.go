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

var refund = &plugins.Plugin{ID: 1, Name: "refund", Catalog: true, Execution: plugins.Execution{Method: "POST"}}

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

// gatedStore is a real store whose leases after the first wait until the
// test lets them through: what the calls wait for shows.
type gatedStore struct {
	*store.Store
	leases atomic.Int64
	gate   chan struct{}
}

func (g *gatedStore) LeaseQuota(ctx context.Context, k store.QuotaKey, limit, want int64) (int64, int64, error) {
	if g.leases.Add(1) > 1 {
		<-g.gate
	}
	return g.Store.LeaseQuota(ctx, k, limit, want)
}

// TestTopUpInBackground: once three quarters of a lease are spent, the
// replica leases back up to one lease while the calls go on spending what
// it holds; a call that finds nothing held waits for that top-up rather
// than leasing again; a replica never holds more than one lease.
func TestTopUpInBackground(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		addRule(t, st, quota.Rule{Name: "all", Calls: 4000, Window: quota.Day}) // leases of 40
		w := store.NewWatcher(st, time.Hour, nil)
		if _, err := w.Poll(t.Context()); err != nil {
			t.Fatal(err)
		}
		g := &gatedStore{Store: st, gate: make(chan struct{})}
		k := quota.New(g, w, nil, time.UTC, nil)
		ctx := t.Context()
		// The 30th call leaves a quarter of the first lease and starts the
		// top-up; the rest of the lease is spent while it waits.
		for i := range 40 {
			if _, err := k.Take(ctx, 7, refund); err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
		}
		for deadline := time.Now().Add(5 * time.Second); g.leases.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond) // the top-up's goroutine starting
		}
		if n := g.leases.Load(); n != 2 {
			t.Fatalf("%d leases asked for after 40 calls, want the first and one top-up", n)
		}
		// Nothing held: the 41st call waits for the top-up, not for a
		// lease of its own.
		done := make(chan error)
		go func() {
			_, err := k.Take(ctx, 7, refund)
			done <- err
		}()
		select {
		case err := <-done:
			t.Fatalf("call 41 went on with nothing held (%v)", err)
		case <-time.After(50 * time.Millisecond):
		}
		close(g.gate)
		if err := <-done; err != nil {
			t.Fatalf("call 41: %v", err)
		}
		if n := g.leases.Load(); n != 2 {
			t.Errorf("%d leases after call 41, want 2", n)
		}
		// The top-up brought the replica back to one lease, no more.
		rules, err := k.Rules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		start, _ := quota.WindowOf(time.Now(), quota.Day, time.UTC)
		used, err := st.QuotaUsed(ctx, store.QuotaKey{Rule: rules[0].ID, User: 7, WindowStart: start.Unix()})
		if err != nil {
			t.Fatal(err)
		}
		if used > 41+40 {
			t.Errorf("%d leased for 41 calls: more than one lease held", used)
		}
		if k.Writes() != 2 {
			t.Errorf("%d writes, want 2", k.Writes())
		}
	})
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

// TestKeepersUnderConflicts (issue 52's Galera trial): 150 calls at once
// against a limit of 50 on three replicas, two of whose every concurrent
// lease conflicts (testdb.NoWait, as a Galera node's certification
// failures): exactly 50 are admitted, and every other call is refused for
// the limit, not as the database unavailable.
func TestKeepersUnderConflicts(t *testing.T) {
	dsn := testdb.DSN(t, store.DialectMySQL)
	st := testdb.At(t, dsn)
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	seven := int64(7)
	addRule(t, st, quota.Rule{Name: "fifty", UserID: &seven, Plugins: []string{"refund"}, Calls: 50, Window: quota.Day})
	keepers := []*quota.Keeper{keeperOn(t, st), keeperOn(t, testdb.NoWait(t, dsn)), keeperOn(t, testdb.NoWait(t, dsn))}
	var admitted, exceeded atomic.Int64
	var wg sync.WaitGroup
	for i := range 150 {
		wg.Go(func() {
			_, err := keepers[i%3].Take(t.Context(), 7, refund)
			if _, ok := errors.AsType[*quota.ExceededError](err); ok {
				exceeded.Add(1)
			} else if err != nil {
				t.Errorf("call refused as: %v", err)
			} else {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 50 || exceeded.Load() != 100 {
		t.Errorf("%d admitted, %d refused for the limit; want 50 and 100", admitted.Load(), exceeded.Load())
	}
}

// returnGated is a real store whose give-backs say they started and wait
// until the test lets them through.
type returnGated struct {
	*store.Store
	started chan struct{}
	gate    chan struct{}
}

func (g *returnGated) ReturnQuota(ctx context.Context, k store.QuotaKey, n int64) error {
	g.started <- struct{}{}
	<-g.gate
	return g.Store.ReturnQuota(ctx, k, n)
}

// TestTidyAllWaitsForGiveBacks: at shutdown Run's Tidy and the caller's
// run together, and the caller closes the store next: a Tidy(all) that
// finds the lease taken by the other returns only once that give-back
// has landed (it once returned at once, the store closed under the
// give-back, and the lease was lost).
func TestTidyAllWaitsForGiveBacks(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	addRule(t, st, quota.Rule{Name: "all", Calls: 1000, Window: quota.Day}) // leases of 10
	w := store.NewWatcher(st, time.Hour, nil)
	if _, err := w.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	g := &returnGated{Store: st, started: make(chan struct{}), gate: make(chan struct{})}
	k := quota.New(g, w, nil, time.UTC, nil)
	ctx := t.Context()
	for range 3 {
		if _, err := k.Take(ctx, 7, refund); err != nil {
			t.Fatal(err)
		}
	}
	first := make(chan struct{})
	go func() {
		k.Tidy(ctx, true)
		close(first)
	}()
	<-g.started // the first Tidy holds the give-back of the 7 left
	second := make(chan struct{})
	go func() {
		k.Tidy(ctx, true)
		close(second)
	}()
	select {
	case <-second:
		t.Fatal("a Tidy(all) returned while a give-back was under way")
	case <-time.After(50 * time.Millisecond):
	}
	close(g.gate)
	<-first
	<-second
	rules, err := k.Rules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start, _ := quota.WindowOf(time.Now(), quota.Day, time.UTC)
	if used, err := st.QuotaUsed(ctx, store.QuotaKey{Rule: rules[0].ID, User: 7, WindowStart: start.Unix()}); err != nil || used != 3 {
		t.Errorf("used %d (%v) after the give-back, want the 3 spent", used, err)
	}
}

// downStore is a real store whose quota writes fail while down is set:
// the database unreachable, then back, on one replica's keeper.
type downStore struct {
	*store.Store
	down atomic.Bool
}

var errDown = errors.New("dial tcp 127.0.0.1:3306: connect: connection refused")

func (d *downStore) LeaseQuota(ctx context.Context, k store.QuotaKey, limit, want int64) (int64, int64, error) {
	if d.down.Load() {
		return 0, 0, errDown
	}
	return d.Store.LeaseQuota(ctx, k, limit, want)
}

// TestRunTokensSpentDuringOutageCounted: the model tokens a run spends
// beyond the lease held while the database is unreachable are counted
// in the day's window once it answers again (by the next run's lease,
// or by Tidy), never forgotten: else every outage hands out a call's
// worth of tokens the day's budget never sees.
func TestRunTokensSpentDuringOutageCounted(t *testing.T) {
	for _, settle := range []string{"next run", "tidy"} {
		t.Run(settle, func(t *testing.T) {
			testdb.Each(t, func(t *testing.T, st *store.Store) {
				ctx := t.Context()
				addRule(t, st, quota.Rule{Name: "tokens", RunTokensPerDay: 100_000}) // leases of 1000
				w := store.NewWatcher(st, time.Hour, nil)
				if _, err := w.Poll(ctx); err != nil {
					t.Fatal(err)
				}
				d := &downStore{Store: st}
				k := quota.New(d, w, nil, time.UTC, nil)
				if b, err := k.RunTokensLeft(ctx, 7); err != nil || !b.Limited {
					t.Fatalf("budget: %+v %v", b, err)
				}
				d.down.Store(true)
				k.SpendRunTokens(ctx, 7, 5000) // 1000 held, 4000 beyond it
				if _, err := k.RunTokensLeft(ctx, 7); err == nil {
					t.Error("a run admitted during the outage with nothing held")
				}
				d.down.Store(false)
				switch settle {
				case "next run":
					if _, err := k.RunTokensLeft(ctx, 7); err != nil {
						t.Fatal(err)
					}
				case "tidy":
					k.Tidy(ctx, false)
				}
				k.Tidy(ctx, true) // what is held unspent goes back
				rules, err := st.ListQuotaRules(ctx)
				if err != nil {
					t.Fatal(err)
				}
				start, _ := quota.WindowOf(time.Now(), quota.Day, time.UTC)
				used, err := st.QuotaUsed(ctx, store.QuotaKey{Rule: rules[0].ID, User: 7, WindowStart: start.Unix()})
				if err != nil || used != 5000 {
					t.Errorf("the day's window counts %d (%v), want the 5000 tokens spent", used, err)
				}
			})
		})
	}
}

// TestBlackholedDatabaseHoldsNoOtherCall: with the database blackholed
// (connections open, nothing answered), what waits on it gives up within
// store.QueryTimeout and holds no other user's call: a rules reload
// stuck for one call leaves another user's call decided on the rules
// held, both within the bound, and the calls after it decided at once;
// run tokens spent beyond the lease are kept as a debt within the bound.
// Before, the reload held the keeper's lock with the call's context (no
// deadline) and every call waited behind it, as did a run's lease under
// the user's bucket.
func TestBlackholedDatabaseHoldsNoOtherCall(t *testing.T) {
	direct, proxy, through := testdb.Blackholable(t)
	st := testdb.At(t, through)
	addRule(t, direct, quota.Rule{Name: "calls", Calls: 1000, Window: quota.Day}) // leases of 10
	addRule(t, direct, quota.Rule{Name: "tokens", RunTokensPerDay: 100_000})      // leases of 1000
	w := store.NewWatcher(direct, time.Hour, nil)                                 // the counters read past the proxy
	if _, err := w.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	k := quota.New(st, w, nil, time.UTC, nil)
	for _, u := range []int64{7, 8} {
		if _, err := k.Take(t.Context(), u, refund); err != nil {
			t.Fatal(err)
		}
		if b, err := k.RunTokensLeft(t.Context(), u); err != nil || !b.Limited {
			t.Fatalf("budget: %+v %v", b, err)
		}
	}
	// The rules change, then the database stops answering: the next call
	// reloads them from a database that never answers.
	addRule(t, direct, quota.Rule{Name: "refunds", Plugins: []string{"refund"}, Calls: 500, Window: quota.Day})
	if _, err := w.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole()

	// The test's own bound: the code under test's must come well before.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	bound := store.QueryTimeout + 2*time.Second
	start := func(what string, fn func() error) func() (time.Duration, error) {
		done := make(chan error, 1)
		began := time.Now()
		go func() { done <- fn() }()
		return func() (time.Duration, error) {
			select {
			case err := <-done:
				return time.Since(began), err
			case <-time.After(bound - time.Since(began)):
				t.Fatalf("%s not decided within %v: held by the database", what, bound)
				return 0, nil
			}
		}
	}
	take := func(u int64) func() error {
		return func() error { _, err := k.Take(ctx, u, refund); return err }
	}

	first := start("user 7's call, reloading the rules", take(7))
	time.Sleep(200 * time.Millisecond) // its reload is on the blackholed connection
	if took, err := start("user 8's call during user 7's reload", take(8))(); err != nil {
		t.Errorf("user 8's call during the reload: %v (after %v), want it admitted on the rules and lease held", err, took)
	}
	if took, err := first(); err != nil {
		t.Errorf("user 7's call: %v (after %v), want it admitted on the rules held", err, took)
	}
	// The reload failed: the calls apply the rules held without waiting.
	if took, err := start("a call once the reload failed", take(8))(); err != nil || took > time.Second {
		t.Errorf("a call once the reload failed: %v after %v, want admitted at once", err, took)
	}

	// A run's tokens beyond its lease are leased under user 7's bucket:
	// bounded, kept as a debt; user 8's run is not held by it.
	spend := start("user 7's run tokens beyond the lease", func() error { k.SpendRunTokens(ctx, 7, 5000); return nil })
	time.Sleep(200 * time.Millisecond)
	took, err := start("user 8's run budget", func() error { _, err := k.RunTokensLeft(ctx, 8); return err })()
	if err != nil || took > time.Second {
		t.Errorf("user 8's run budget during user 7's lease: %v after %v, want what is held, at once", err, took)
	}
	spend()
}
