package console_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestAuditImports: an import is an administrative change when it
// applied something, streamed or not; a dry run and a failed import are
// not, though a streamed one's status is 200 whatever its end.
func TestAuditImports(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) { auditImports(t, newEnv(t, st, newMasterKey())) })
}

func auditImports(t *testing.T, e *env) {
	spec := func(title string) string {
		return `{"openapi": "3.0.3", "info": {"title": "` + title + `", "version": "1"}, "servers": [{"url": "https://api.example"}],
		  "paths": {"/a": {"get": {"operationId": "getA", "responses": {"200": {"description": "ok"}}}}}}`
	}
	imp := func(query, doc string, progress bool) {
		t.Helper()
		req, _ := http.NewRequest("POST", e.url+"/v1/plugins/import/openapi?"+query, strings.NewReader(doc))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/yaml")
		if progress {
			req.Header.Set("Accept", "application/x-ndjson")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("import %s: %d %s", query, resp.StatusCode, body)
		}
	}
	imp("dry_run=true&prefix=a", spec("A"), false)
	imp("dry_run=true&prefix=b", spec("B"), true)
	imp("prefix=c&base_url=ftp://nowhere", spec("C"), true) // fails once streaming
	imp("prefix=d", spec("D"), true)
	imp("prefix=e", spec("E"), false)
	events, err := e.st.ListAdminEvents(t.Context(), store.AdminEventFilter{Kind: "import"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Errorf("%d imports recorded, want the 2 applied: %+v", len(events), events)
	}
}
