package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestEgressAllowIsTheOperators: BLINDEXEC_EGRESS_ALLOW opens internal
// addresses to what the operator vouches for — the catalog's plugins,
// the service's and the administrator's inline plugins — not to a
// per-user token's own inline plugin, which reached every allowed
// internal address and read its answer (the engine as a proxy into the
// operator's network). Bound inline copies are the catalog's rows and
// keep the allowance.
func TestEgressAllowIsTheOperators(t *testing.T) {
	up, hits := countingUpstream(t)
	const admin, service = "egress-admin-token", "egress-service-token"
	a := startEngines(t, 1, testdb.DSN(t, store.DialectSQLite), admin, "BLINDEXEC_SERVICE_TOKEN="+service)[0]
	plugin := func(name, path string) map[string]any {
		return map[string]any{"name": name, "description": "d", "parameters": map[string]any{"type": "object"},
			"execution": map[string]any{"method": "GET", "base_url": up.URL + path}}
	}
	if code, out := a.do(t, "POST", "/v1/plugins", admin, plugin("internal", "/catalog")); code != http.StatusCreated {
		t.Fatalf("add: %d %v", code, out)
	}
	code, created := a.do(t, "POST", "/v1/tokens", admin, map[string]any{"user_id": 7, "name": "egress"})
	if code != http.StatusCreated {
		t.Fatalf("token: %d %v", code, created)
	}
	user := created["token"].(string)
	for _, tc := range []struct {
		name, token string
		body        map[string]any
		sent        bool
	}{
		{"the catalog's plugin, per-user token", user, map[string]any{"name": "internal"}, true},
		{"an inline copy of it, per-user token", user, map[string]any{"plugin": plugin("internal", "/catalog")}, true},
		{"the service's inline plugin", service, map[string]any{"plugin": plugin("own", "/service"), "user_id": 7}, true},
		{"the administrator's inline plugin", admin, map[string]any{"plugin": plugin("own", "/admin"), "user_id": 7}, true},
		{"a per-user token's inline plugin", user, map[string]any{"plugin": plugin("own", "/anything")}, false},
		{"a per-user token's inline plugin named like the row", user, map[string]any{"plugin": plugin("internal", "/elsewhere")}, false},
	} {
		before := hits.Load()
		code, out := a.do(t, "POST", "/v1/execute", tc.token, tc.body)
		sent := hits.Load() != before
		errBody, _ := out["error"].(map[string]any)
		switch {
		case tc.sent && (code != http.StatusOK || out["ok"] != true || !sent):
			t.Errorf("%s: %d %v, sent %v; want sent", tc.name, code, out, sent)
		case !tc.sent && (sent || errBody["code"] != "egress_denied"):
			t.Errorf("%s: %d %v, sent %v; want egress_denied", tc.name, code, out, sent)
		case !tc.sent && !strings.Contains(fmt.Sprint(errBody["message"]), "a per-user token's own inline plugin stays under the default deny"):
			// Not "allow it with BLINDEXEC_EGRESS_ALLOW": it is set, and opens nothing here.
			t.Errorf("%s: %v, want the reason no allowance applies", tc.name, errBody["message"])
		}
	}
}
