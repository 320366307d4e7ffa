package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestReadyzDetailToOperators (leftovers77): /readyz needs no token, so
// it says the reason's kind to anyone and the detail (a table's name, the
// database's error) to the administrator's or the metrics token only, and
// logs it once. Before: the permission source's error, naming sys_user,
// to anyone.
func TestReadyzDetailToOperators(t *testing.T) {
	const metrics = "metrics-token-readyz-0123456789"
	st := testdb.Open(t, store.DialectSQLite) // no RuoYi tables: the source is unreadable
	checker, err := access.New(st.DB(), access.Settings{Mode: access.ModeOpen, Source: access.SourceRuoYi, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, st, func(s *api.Server) {
		s.Executor.Access, s.Access, s.MetricsToken = checker, checker, metrics
	})
	ask := func(token string) (int, string) {
		code, body := e.do("GET", "/readyz", token, nil)
		return code, fmt.Sprint(body)
	}
	for _, token := range []string{"", serviceToken, "not-a-token"} {
		code, body := ask(token)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "not_ready") || !strings.Contains(body, "permissions source unreadable") {
			t.Errorf("/readyz with %q: %d %s, want 503 not_ready saying the source is unreadable", token, code, body)
		}
		if strings.Contains(body, "sys_user") || strings.Contains(body, "ruoyi") {
			t.Errorf("/readyz with %q shows the detail: %s", token, body)
		}
	}
	for _, token := range []string{adminToken, metrics} {
		if code, body := ask(token); code != http.StatusServiceUnavailable || !strings.Contains(body, "BLINDEXEC_PERMISSIONS=ruoyi") || !strings.Contains(body, "sys_user") {
			t.Errorf("/readyz with the operator's token %.6s…: %d %s, want the detail", token, code, body)
		}
	}
	if n := strings.Count(e.logs.String(), "permissions source unreadable"); n != 1 {
		t.Errorf("the reason logged %d times, want once:\n%s", n, e.logs.String())
	} else if !strings.Contains(e.logs.String(), "sys_user") {
		t.Errorf("the log lacks the detail:\n%s", e.logs.String())
	}

	// Within the outage grace: "unreachable", the driver's error to the
	// operator only.
	st2 := testdb.Open(t, store.DialectSQLite)
	changes := store.NewWatcher(st2, time.Hour, nil)
	if _, err := changes.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := newEnv(t, st2, func(s *api.Server) { s.Changes, s.OutageGrace = changes, time.Hour })
	st2.Close()
	if code, body := d.do("GET", "/readyz", "", nil); code != http.StatusOK || body["status"] != "degraded" || body["database"] != "unreachable" {
		t.Errorf("/readyz degraded, no token: %d %v, want 200 degraded, database \"unreachable\" alone", code, body)
	}
	if code, body := d.do("GET", "/readyz", adminToken, nil); code != http.StatusOK || !strings.Contains(fmt.Sprint(body["database"]), "closed") {
		t.Errorf("/readyz degraded, the admin's token: %d %v, want the error", code, body)
	}
}
