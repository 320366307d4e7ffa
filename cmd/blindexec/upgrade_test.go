package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
)

// ops78: an OpenAPI source stored with its URL whole — imported before
// migration 00031, or synced during a rolling upgrade by a replica of an
// older version — kept the password in sys_ai_import_source.location (and
// in every dump) until its next sync from the URL whole, and a sync from
// the location as shown was refused (no URL kept). serve seals it at
// start: the location as shown, the URL sealed under the master key, and
// a sync from the location shown fetches the document.
func TestServeSealsLocationsStoredWhole(t *testing.T) {
	const secret = "pw-ops78-Zq9s"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); (!ok || u != "alice" || p != secret) && r.URL.Query().Get("access_token") != secret && !strings.HasSuffix(r.URL.Path, ";jsessionid="+secret) {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"openapi":"3.0.3","info":{"title":"Shop","version":"1"},"servers":[{"url":"/api"}],"paths":{"/items":{"get":{"operationId":"listItems","responses":{"200":{"description":"ok"}}}}}}`)
	}))
	defer up.Close()
	host := strings.TrimPrefix(up.URL, "http://")
	for _, c := range []struct{ name, full, shown string }{
		{"userinfo", "http://alice:" + secret + "@" + host + "/spec.json", "http://…@" + host + "/spec.json"},
		// leftovers78: a query's credential, stored whole before 00034
		{"query", "http://" + host + "/spec.json?group=a&access_token=" + secret, "http://" + host + "/spec.json?group=a&access_token=…"},
		// leftovers80: a path parameter's, stored whole before 00035
		{"path parameter", "http://" + host + "/spec.json;jsessionid=" + secret, "http://" + host + "/spec.json;jsessionid=…"},
	} {
		t.Run(c.name, func(t *testing.T) { sealsStoredWhole(t, c.full, c.shown, secret) })
	}
}

func sealsStoredWhole(t *testing.T, full, shown, secret string) {
	dsn := testdb.DSN(t, "sqlite")
	key := make([]byte, 32)
	rand.Read(key)
	env := []string{"BLINDEXEC_ADMIN_TOKEN=admin-ops78", "BLINDEXEC_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key),
		"BLINDEXEC_EGRESS_ALLOW=127.0.0.1", "BLINDEXEC_LOG_LEVEL=info"}
	r := startReplicasOn(t, []string{dsn}, env...)[0]
	if code, res := r.do(t, "POST", "/v1/plugins/import/openapi", "admin-ops78", map[string]any{"url": full}); code != http.StatusOK {
		t.Fatalf("import: %d %v", code, res)
	}
	r.cmd.Process.Signal(os.Interrupt)
	r.cmd.Wait()
	// As an older engine leaves it: the URL whole, nothing sealed.
	_, exec := openSQL(t, dsn)
	exec("UPDATE sys_ai_import_source SET location = '" + full + "', sealed_url = NULL")

	r = startReplicasOn(t, []string{dsn}, env...)[0]
	st, _ := openSQL(t, dsn)
	var location string
	var sealed *string
	if err := st.DB().QueryRow("SELECT location, sealed_url FROM sys_ai_import_source").Scan(&location, &sealed); err != nil {
		t.Fatal(err)
	}
	if location != shown || sealed == nil || strings.Contains(*sealed, secret) {
		t.Fatalf("after serve's start: location %q, sealed %v; want %q and the URL sealed", location, sealed, shown)
	}
	if code, res := r.do(t, "POST", "/v1/plugins/import/openapi", "admin-ops78", map[string]any{"url": shown}); code != http.StatusOK {
		t.Fatalf("a sync from the location shown: %d %v", code, res)
	}
}
