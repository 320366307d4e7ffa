package connections_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/connections/oauthtest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestRefreshFailures: a refresh whose answer is lost, a claim whose
// owner died, and a refresh token the provider revoked each leave the
// connection broken — the user reconnects — and the old refresh token is
// never sent again (fosite would take a reuse for theft and revoke the
// whole grant).
func TestRefreshFailures(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		expired := func(t *testing.T) (*env, string) {
			e := newEnv(t, testdb.Open(t, kind), envOptions{lifespan: 2 * time.Second})
			e.registerProvider()
			e.addPlugin("acme_me", "read")
			e.connect(7, "alice")
			_, refresh := e.tokens(7)
			time.Sleep(2100 * time.Millisecond)
			return e, refresh
		}
		broken := func(t *testing.T, e *env, reason string) {
			t.Helper()
			out := e.call("acme_me", 7)
			if code, d := errorOf(out); code != "connection_required" || d["provider"] != "acme" {
				t.Fatalf("call of a broken connection: %v", out)
			}
			_, list := e.do("GET", "/v1/connections?user_id=7", serviceToken, nil)
			c := list["connections"].([]any)[0].(map[string]any)
			if c["state"] != "broken" || !strings.Contains(c["reason"].(string), reason) {
				t.Fatalf("connection: %v", c)
			}
		}

		t.Run("the answer lost", func(t *testing.T) {
			e, _ := expired(t)
			e.as.DropRefreshAnswers(1)
			broken(t, e, "answer was lost")
			broken(t, e, "answer was lost") // and no second refresh
			if n := e.as.Refreshes.Load(); n != 1 {
				t.Fatalf("%d refresh requests, want 1: the old refresh token was sent again", n)
			}
			// Reconnecting mends it.
			e.connect(7, "alice")
			if o := outputOf(t, e.call("acme_me", 7)); o["account"] != "alice" {
				t.Fatalf("after reconnecting: %v", o)
			}
		})
		t.Run("the refreshing replica died", func(t *testing.T) {
			e, _ := expired(t)
			ctx := context.Background()
			row, err := e.st.GetOAuthConnection(ctx, 7, "acme")
			if err != nil {
				t.Fatal(err)
			}
			// A replica claimed the row and stopped: its claim runs out.
			if ok, err := e.st.ClaimOAuthRefresh(ctx, row.ID, row.Version, "dead-replica", time.Now().Add(2*time.Second)); !ok || err != nil {
				t.Fatalf("claim: %v %v", ok, err)
			}
			start := time.Now()
			broken(t, e, "the replica refreshing it stopped")
			if time.Since(start) < 500*time.Millisecond {
				t.Fatal("the call did not wait for the claim to run out")
			}
			if n := e.as.Refreshes.Load(); n != 0 {
				t.Fatalf("%d refresh requests after a claim ran out, want 0", n)
			}
		})
		t.Run("the refresh token revoked", func(t *testing.T) {
			e, refresh := expired(t)
			form := url.Values{"token": {refresh}, "token_type_hint": {"refresh_token"}}
			req, _ := http.NewRequest("POST", e.as.URL+"/revoke", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(oauthtest.ClientID, oauthtest.ClientSecret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("revoke at fosite: %v %v", resp, err)
			}
			resp.Body.Close()
			broken(t, e, "invalid_grant")
			if n := e.as.Refreshes.Load(); n != 1 {
				t.Fatalf("%d refresh requests, want 1", n)
			}
			e.assertNoTokenShown(refresh)
		})
	})
}

// TestRefreshAfter401: an API answering 401 to a token the engine still
// holds for valid (it expired early at the provider) gets one refresh and
// one retry; a 401 soon after a refresh (an API refusing for another
// reason) causes no refresh storm.
func TestRefreshAfter401(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{lifespan: 2 * time.Second})
	for _, r := range e.replicas {
		r.svc.RefreshFloor = time.Minute
	}
	e.registerProvider()
	e.addPlugin("acme_me", "read")
	e.connect(7, "alice")
	// The engine believes the token lives an hour; fosite lets it die in
	// two seconds, rounded to the second (so up to 2.5 s after issue).
	// The connection dates from before the floor, so the first 401 may
	// refresh; the second comes within the floor of that refresh however
	// slow the machine.
	if _, err := e.st.DB().Exec("UPDATE sys_ai_oauth_connection SET expires_at = ?, connected_at = ?",
		time.Now().Add(time.Hour).UTC().Truncate(time.Second), time.Now().Add(-2*time.Minute).UTC().Truncate(time.Second)); err != nil {
		t.Fatal(err)
	}
	// fosite rounds an expiry to the second: past 2.5 s it is gone.
	time.Sleep(3 * time.Second)
	hits := e.apiHits.Load()
	if o := outputOf(t, e.call("acme_me", 7)); o["account"] != "alice" {
		t.Fatalf("after a 401: %v", o)
	}
	if n := e.as.Refreshed.Load(); n != 1 || e.apiHits.Load()-hits != 2 {
		t.Fatalf("%d refreshes and %d API requests, want 1 and 2 (the 401, then the retry)", n, e.apiHits.Load()-hits)
	}
	// Within the floor of that refresh, a 401 is the answer: no refresh.
	e.api401.Store(true)
	out := e.call("acme_me", 7)
	if code, _ := errorOf(out); code != "http_error" || out["http_status"] != float64(401) || e.as.Refreshes.Load() != 1 {
		t.Fatalf("within the floor: %v, %d refreshes", out, e.as.Refreshes.Load())
	}
}
