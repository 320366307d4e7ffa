package store_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func pendingItem(id string, user int64, item string) *store.PendingItem {
	u := user
	return &store.PendingItem{ID: id, UserID: &u, Principal: fmt.Sprintf("user:%d", user), Kind: "confirmation", Tool: "t",
		Digest: strings.Repeat("0", 64), Item: store.JSON(item), ExpireTime: time.Now().Add(time.Hour).UTC()}
}

// TestPendingBoundedPerUser: at most the limit of items wait for one
// user, concurrent writers included (issue 44 case 7), refused with a
// *TooManyPendingError; other users are not affected; an item larger
// than MaxPendingItem is refused whole; a decided or expired item no
// longer counts.
func TestPendingBoundedPerUser(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		st.SetPendingMax(5)
		var (
			wg                sync.WaitGroup
			mu                sync.Mutex
			admitted, refused int
		)
		for i := range 12 {
			wg.Go(func() {
				err := st.CreatePendingItem(ctx, pendingItem(fmt.Sprintf("a%02d", i), 7, `{}`))
				var tm *store.TooManyPendingError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					admitted++
				case errors.As(err, &tm) && tm.Max == 5:
					refused++
				default:
					t.Errorf("item %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if admitted != 5 || refused != 7 {
			t.Fatalf("12 concurrent items of one user: %d admitted, %d refused; want 5 and 7", admitted, refused)
		}
		if n, err := st.CountWaiting(ctx, new(int64(7))); err != nil || n != 5 {
			t.Fatalf("waiting for user 7: %d, %v", n, err)
		}
		if err := st.CreatePendingItem(ctx, pendingItem("b1", 8, `{}`)); err != nil {
			t.Fatalf("another user's item: %v", err)
		}
		// Calls naming no user are a bucket of their own.
		for i := range 6 {
			it := pendingItem(fmt.Sprintf("n%d", i), 0, `{}`)
			it.UserID = nil
			err := st.CreatePendingItem(ctx, it)
			if want := i < 5; (err == nil) != want {
				t.Fatalf("item %d naming no user: %v", i, err)
			}
		}
		// A run pausing on two items past the limit stores none of them.
		run := &store.Run{ID: "r1", UserID: new(int64(7)), Status: store.RunRunning}
		if err := st.SaveRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		items := []store.PendingItem{*pendingItem("r1a", 7, `{}`), *pendingItem("r1b", 7, `{}`)}
		items[0].RunID, items[1].RunID = "r1", "r1"
		var tm *store.TooManyPendingError
		if err := st.PauseRun(ctx, run, items); !errors.As(err, &tm) {
			t.Fatalf("a run pausing past the limit: %v, want TooManyPendingError", err)
		}
		if got, _ := st.PendingItems(ctx, "r1"); len(got) != 0 {
			t.Fatalf("a refused pause stored %d items", len(got))
		}
		// Decided, an item no longer counts.
		waiting, _, err := st.WaitingPage(ctx, store.WaitingFilter{User: new(int64(7))}, "", 0)
		if err != nil || len(waiting) != 5 {
			t.Fatalf("user 7's waiting items: %d, %v", len(waiting), err)
		}
		if won, err := st.DecideItem(ctx, waiting[0].ID, "denied", "user:7", ""); err != nil || !won {
			t.Fatal(won, err)
		}
		if err := st.CreatePendingItem(ctx, pendingItem("a99", 7, `{}`)); err != nil {
			t.Fatalf("an item after one was decided: %v", err)
		}
		big := `{"x":"` + strings.Repeat("a", store.MaxPendingItem) + `"}`
		var tl *store.PendingTooLargeError
		if err := st.CreatePendingItem(ctx, pendingItem("big", 9, big)); !errors.As(err, &tl) || tl.Max != store.MaxPendingItem {
			t.Fatalf("an item of %d bytes: %v, want PendingTooLargeError", len(big), err)
		}
	})
}

// TestInboxPages: waiting items and paused runs are read newest first,
// one page at a time, by user or of everyone; the cursor continues where
// the page ended; a forged cursor is refused (issue 44 cases 7 and 8).
func TestInboxPages(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		for i := range 7 {
			user := int64(1 + i%2) // 1, 2, 1, 2…
			direct := pendingItem(fmt.Sprintf("p%d", i), user, `{}`)
			direct.Tool = []string{"search", "payroll", "mail"}[i%3]
			if err := st.CreatePendingItem(ctx, direct); err != nil {
				t.Fatal(err)
			}
			run := &store.Run{ID: fmt.Sprintf("run%d", i), UserID: &user, Status: store.RunRunning, Reply: store.JSON(`{"big":"` + strings.Repeat("r", 1000) + `"}`)}
			if i%3 == 0 {
				run.TokenID = new(int64(40 + i%2)) // run0, run6: token 40; run3: 41
			}
			if err := st.SaveRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			it := pendingItem(fmt.Sprintf("r%d", i), user, `{}`)
			it.RunID = run.ID
			exp := time.Now().Add(time.Hour)
			run.ExpireTime = &exp
			if err := st.PauseRun(ctx, run, []store.PendingItem{*it}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond) // distinct create times, as in life
		}
		var got []string
		after := ""
		for {
			items, next, err := st.WaitingPage(ctx, store.WaitingFilter{}, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) > 3 {
				t.Fatalf("a page of %d items, asked for 3", len(items))
			}
			for _, it := range items {
				got = append(got, it.ID)
			}
			if next == "" {
				break
			}
			after = next
		}
		if strings.Join(got, " ") != "p6 p5 p4 p3 p2 p1 p0" {
			t.Fatalf("waiting items paged: %v, want newest first, each once", got)
		}
		items, next, err := st.WaitingPage(ctx, store.WaitingFilter{User: new(int64(2))}, "", 0)
		if err != nil || next != "" || len(items) != 3 || items[0].ID != "p5" {
			t.Fatalf("user 2's items: %v %q %v", items, next, err)
		}
		// A token with fixed perms: the items of the tools it may use,
		// the runs it started (review 68).
		for _, tt := range []struct {
			tools []string
			want  string
		}{{[]string{"search", "mail"}, "p6 p5 p3 p2 p0"}, {[]string{"payroll"}, "p4 p1"}, {[]string{}, ""}} {
			items, _, err := st.WaitingPage(ctx, store.WaitingFilter{Tools: tt.tools}, "", 0)
			var ids []string
			for _, it := range items {
				ids = append(ids, it.ID)
			}
			if err != nil || strings.Join(ids, " ") != tt.want {
				t.Errorf("items of tools %v: %v %v, want %s", tt.tools, ids, err, tt.want)
			}
		}
		mine, _, err := st.RunsPage(ctx, store.RunFilter{Token: new(int64(40))}, "", 0)
		if err != nil || len(mine) != 2 || mine[0].ID != "run6" || mine[1].ID != "run0" || *mine[0].TokenID != 40 {
			t.Errorf("runs of token 40: %v %v, want run6 run0", mine, err)
		}
		runs, next, err := st.RunsPage(ctx, store.RunFilter{Status: store.RunPaused}, "", 4)
		if err != nil || len(runs) != 4 || runs[0].ID != "run6" || next == "" {
			t.Fatalf("paused runs, first page: %v %q %v", runs, next, err)
		}
		if len(runs[0].Reply) != 0 || len(runs[0].State) != 0 {
			t.Errorf("a page of runs read their replies and states")
		}
		rest, next, err := st.RunsPage(ctx, store.RunFilter{Status: store.RunPaused}, next, 4)
		if err != nil || len(rest) != 3 || rest[0].ID != "run2" || next != "" {
			t.Fatalf("paused runs, second page: %v %q %v", rest, next, err)
		}
		its, err := st.WaitingItemsOf(ctx, []string{"run6", "run2"})
		if err != nil || len(its) != 2 {
			t.Fatalf("items of a page of runs: %v %v", its, err)
		}
		for _, bad := range []string{"x", "bm90LWEtY3Vyc29y", "MTIz"} {
			if _, _, err := st.WaitingPage(ctx, store.WaitingFilter{}, bad, 0); !errors.Is(err, store.ErrBadCursor) {
				t.Errorf("cursor %q: %v, want ErrBadCursor", bad, err)
			}
		}
	})
}

// TestPrunePending: decided and expired items are removed once closed
// before the cutoff, waiting ones and those of paused runs kept; an
// expired run's state goes with its items.
func TestPrunePending(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		for _, id := range []string{"decided", "waiting", "lapsed"} {
			it := pendingItem(id, 3, `{}`)
			if id == "lapsed" {
				it.ExpireTime = time.Now().Add(-time.Hour).UTC()
			}
			if err := st.CreatePendingItem(ctx, it); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.DecideItem(ctx, "decided", "approved", "user:3", ""); err != nil {
			t.Fatal(err)
		}
		user := int64(3)
		for _, id := range []string{"paused", "gone"} {
			exp := time.Now().Add(time.Hour)
			if id == "gone" {
				exp = time.Now().Add(-time.Minute)
			}
			run := &store.Run{ID: id, UserID: &user, Status: store.RunRunning, ExpireTime: &exp, State: store.JSON(`{}`)}
			if err := st.SaveRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			it := pendingItem("item-"+id, 3, `{}`)
			it.RunID = id
			if err := st.PauseRun(ctx, run, []store.PendingItem{*it}); err != nil {
				t.Fatal(err)
			}
		}
		n, err := st.PrunePending(ctx, time.Now().Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if n != 3 {
			t.Errorf("pruned %d items, want 3 (decided, lapsed, the expired run's)", n)
		}
		for id, want := range map[string]bool{"decided": false, "lapsed": false, "item-gone": false, "waiting": true, "item-paused": true} {
			_, err := st.GetPendingItem(ctx, id)
			if kept := err == nil; kept != want {
				t.Errorf("item %s kept = %v, want %v (%v)", id, kept, want, err)
			}
		}
		if run, err := st.GetRun(ctx, "gone"); err != nil || run.Status != store.RunExpired || len(run.State) != 0 {
			t.Errorf("expired run after pruning: %+v %v, want expired without state", run, err)
		}
		if run, err := st.GetRun(ctx, "paused"); err != nil || len(run.State) == 0 {
			t.Errorf("paused run after pruning: %v, want its state kept", err)
		}
	})
}
