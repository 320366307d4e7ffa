package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestImportUploadOptions: an upload's options are its query string, and
// one the route does not read is refused naming it — a newcomer's
// ?methods=get (the JSON field's name) imported every operation — and
// ?dry_run=1 is a dry run, as the description's boolean reads (it wrote
// the import); and a document sent as application/json
// is told apart from the request it is not (newcomer74).
func TestImportUploadOptions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		doc := `{"openapi": "3.0.3", "info": {"title": "Desk", "version": "1"}, "servers": [{"url": "https://desk.example"}],
		  "paths": {"/orders/{id}": {
		    "get": {"operationId": "getOrder", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}], "responses": {"200": {"description": "ok"}}},
		    "delete": {"operationId": "deleteOrder", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}], "responses": {"204": {"description": "gone"}}}}}}`
		post := func(query, contentType string) (int, map[string]any) {
			req, _ := http.NewRequest("POST", e.url+"/v1/plugins/import/openapi"+query, strings.NewReader(doc))
			req.Header.Set("Authorization", "Bearer "+adminToken)
			req.Header.Set("Content-Type", contentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			json.NewDecoder(resp.Body).Decode(&out)
			return resp.StatusCode, out
		}
		const upload = "application/vnd.oai.openapi+json"
		for _, tc := range []struct {
			query, contentType string
			status             int
			says               []string // in the error's message
			added              []any
		}{
			{"?prefix=desk&dry_run=1", upload, http.StatusOK, nil, []any{"desk_getOrder", "desk_deleteOrder"}},
			{"?strict=yes&dry_run=true", upload, http.StatusBadRequest, []string{"strict", `"yes"`}, nil},
			{"?methods=get&dry_run=true", upload, http.StatusBadRequest, []string{"methods", "method, once for each"}, nil},
			{"?consequential=true&dry_run=true", upload, http.StatusBadRequest, []string{"consequential", "operation_id"}, nil},
			{"?prefix=desk&method=get&dry_run=true&dry_run=", upload, http.StatusOK, nil, []any{"desk_getOrder"}},
			{"?prefix=desk&dry_run=true", "application/json", http.StatusBadRequest, []string{"OpenAPI document", `{"document"`}, nil},
		} {
			code, out := post(tc.query, tc.contentType)
			failure, _ := out["error"].(map[string]any)
			msg, _ := failure["message"].(string)
			if code != tc.status {
				t.Errorf("%s (%s): %d %v, want %d", tc.query, tc.contentType, code, out, tc.status)
				continue
			}
			for _, s := range tc.says {
				if !strings.Contains(msg, s) {
					t.Errorf("%s: the error %s does not say %s", tc.query, msg, s)
				}
			}
			if added, _ := out["added"].([]any); tc.status == http.StatusOK && (!slices.Equal(added, tc.added) || out["dry_run"] != true) {
				t.Errorf("%s: %v, want a dry run adding %v", tc.query, out, tc.added)
			}
		}
		// Every answer above was a refusal or a dry run: nothing written.
		if code, out := e.do("GET", "/v1/plugins", adminToken, nil); code != http.StatusOK || out["total"] != float64(0) {
			t.Errorf("the catalog after refusals and dry runs: %d %v", code, out)
		}
	})
}
