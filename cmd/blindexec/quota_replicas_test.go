package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/quota"
)

// TestQuotaAcrossReplicas runs three serve processes on one database and
// hammers users' limits through two of them at once: together they admit
// exactly the limit, small (300) or large (2,000); a replica stopped with
// SIGTERM gives back the lease it held, so nothing is lost; a replica
// killed loses at most the one lease it held.
func TestQuotaAcrossReplicas(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		dsn := testdb.DSN(t, kind)
		up, sent := countingUpstream(t)
		const admin = "quota-admin-token"
		rs := startEngines(t, 3, dsn, admin, "BLINDEXEC_MAX_CONCURRENT_PER_USER=64")
		a, b, c := rs[0], rs[1], rs[2]
		st, _ := openSQL(t, dsn)
		if code, body := a.do(t, "POST", "/v1/plugins", admin, map[string]any{"name": "refund", "description": "refund an order",
			"parameters": map[string]any{"type": "object"}, "execution": map[string]any{"method": "POST", "base_url": up.URL}}); code != http.StatusCreated {
			t.Fatalf("add plugin: %d %v", code, body)
		}
		limits := map[int64]int64{7: 300, 8: 2000, 9: 1000, 10: 1000}
		for user, calls := range limits {
			if code, body := a.do(t, "POST", "/v1/quotas/rules", admin, map[string]any{"name": fmt.Sprint("user-", user), "user_id": user,
				"plugins": []string{"refund"}, "calls": calls, "window": "day"}); code != http.StatusCreated {
				t.Fatalf("add rule: %d %v", code, body)
			}
		}
		for _, r := range rs {
			r.awaitPoll(t, st)
		}

		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		// hammer sends calls of user through the replicas from 16 workers
		// and returns how many were admitted; anything but 200 and 429
		// fails the test.
		hammer := func(user int64, calls int, to ...*replica) int64 {
			var admitted atomic.Int64
			var wg sync.WaitGroup
			body, _ := json.Marshal(map[string]any{"name": "refund", "arguments": map[string]any{}, "user_id": user})
			for w := range 16 {
				wg.Go(func() {
					for i := w; i < calls; i += 16 {
						req, _ := http.NewRequest("POST", to[i%len(to)].url+"/v1/execute", bytes.NewReader(body))
						req.Header.Set("Authorization", "Bearer "+admin)
						resp, err := client.Do(req)
						if err != nil {
							t.Error(err)
							return
						}
						raw, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						switch resp.StatusCode {
						case http.StatusOK:
							admitted.Add(1)
						case http.StatusTooManyRequests:
							if resp.Header.Get("Retry-After") == "" {
								t.Errorf("429 without Retry-After: %s", raw)
							}
						default:
							t.Errorf("user %d: %d %s", user, resp.StatusCode, raw)
							return
						}
					}
				})
			}
			wg.Wait()
			return admitted.Load()
		}
		// settle waits until the leases left unspent are given back (the
		// database counts as used only the admitted calls), then Recheck,
		// after which a replica that found the window spent (before the
		// give-backs) asks again.
		settle := func(user, admitted int64) {
			for deadline := time.Now().Add(time.Minute); ; {
				var used int64
				if err := st.DB().QueryRow("SELECT COALESCE(SUM(used), 0) FROM sys_ai_quota_use WHERE user_id = ?", user).Scan(&used); err != nil {
					t.Fatal(err)
				}
				if used == admitted {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("user %d: %d leased a minute after the calls, %d admitted: the leases left were not given back", user, used, admitted)
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(quota.Recheck)
		}

		for _, user := range []int64{7, 8} {
			got := hammer(user, int(limits[user])*13/10, a, b)
			settle(user, got)
			got += hammer(user, 64, a, b)
			if got != limits[user] {
				t.Errorf("user %d: %d admitted across two replicas, want exactly %d", user, got, limits[user])
			}
		}

		// User 9: A takes a lease (10) and spends 3 of it, then stops
		// gracefully: it gives back the 7, and B admits the rest.
		got := hammer(9, 3, a)
		a.cmd.Process.Signal(os.Interrupt)
		a.cmd.Wait()
		got += hammer(9, 1100, b)
		if got != limits[9] {
			t.Errorf("user 9, A stopped holding a lease: %d admitted, want exactly %d", got, limits[9])
		}
		// User 10: C takes a lease, spends 3 and is killed: at most that
		// lease is lost.
		got = hammer(10, 3, c)
		c.cmd.Process.Kill()
		c.cmd.Wait()
		got += hammer(10, 1100, b)
		if lost := limits[10] - got; lost < 0 || lost > quota.LeaseSize(limits[10]) {
			t.Errorf("user 10, C killed holding a lease: %d admitted of %d, want at most one lease (%d) lost", got, limits[10], quota.LeaseSize(limits[10]))
		}
		var want int64
		for _, n := range limits {
			want += n
		}
		if s := sent.Load(); s > want {
			t.Errorf("the upstream received %d calls, more than the limits' %d", s, want)
		}
	})
}
