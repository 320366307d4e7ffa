package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestToolsShowConsequential: GET /v1/tools classifies each tool beside
// its OpenAI function object (which callers forward to models), never in
// it; POST /v1/plugins/consequential sets the classification by name or
// tag, and null derives it again from the method.
func TestToolsShowConsequential(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		for _, p := range []map[string]any{
			{"name": "list_repos", "description": "List", "parameters": map[string]any{"type": "object"},
				"execution": map[string]any{"method": "GET", "base_url": "https://api.example.com/repos"}},
			{"name": "delete_repo", "description": "Delete", "parameters": map[string]any{"type": "object"}, "tags": []string{"danger"},
				"execution": map[string]any{"method": "DELETE", "base_url": "https://api.example.com/repo"}},
		} {
			if code, res := e.do("POST", "/v1/plugins", adminToken, p); code != http.StatusCreated {
				t.Fatalf("create %s: %d %v", p["name"], code, res)
			}
		}
		shown := func() map[string]any {
			t.Helper()
			code, res := e.do("GET", "/v1/tools", serviceToken, nil)
			if code != http.StatusOK {
				t.Fatalf("GET /v1/tools: %d %v", code, res)
			}
			out := map[string]any{}
			for _, tl := range res["tools"].([]any) {
				tool := tl.(map[string]any)
				f := tool["function"].(map[string]any)
				if _, in := f["consequential"]; in {
					t.Errorf("%s: consequential inside the function object, which models read", f["name"])
				}
				out[f["name"].(string)] = tool["consequential"]
			}
			return out
		}
		if got := shown(); got["list_repos"] != false || got["delete_repo"] != true {
			t.Errorf("derived: %v, want list_repos false, delete_repo true", got)
		}
		set := func(body map[string]any, want int) {
			t.Helper()
			if code, res := e.do("POST", "/v1/plugins/consequential", adminToken, body); code != want {
				t.Fatalf("POST /v1/plugins/consequential %v: %d %v, want %d", body, code, res, want)
			}
		}
		set(map[string]any{"tag": "danger", "consequential": false}, http.StatusOK)
		set(map[string]any{"names": []string{"list_repos"}, "consequential": true}, http.StatusOK)
		if got := shown(); got["list_repos"] != true || got["delete_repo"] != false {
			t.Errorf("set: %v, want list_repos true, delete_repo false", got)
		}
		set(map[string]any{"names": []string{"list_repos", "delete_repo"}, "consequential": nil}, http.StatusOK)
		if got := shown(); got["list_repos"] != false || got["delete_repo"] != true {
			t.Errorf("derived again: %v", got)
		}
		set(map[string]any{"names": []string{"list_repos"}}, http.StatusBadRequest)
		set(map[string]any{"names": []string{"list_repos"}, "consequential": "yes"}, http.StatusBadRequest)
		set(map[string]any{"consequential": true}, http.StatusBadRequest)
		if code, _ := e.do("POST", "/v1/plugins/consequential", serviceToken, map[string]any{"names": []string{"x"}, "consequential": true}); code != http.StatusForbidden {
			t.Errorf("the service token classified plugins: %d, want 403", code)
		}
	})
}

// TestImportClassifies: an import may carry the administrator's
// classification of every plugin it writes; a later sync keeps it.
func TestImportClassifies(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	e := newEnv(t, st)
	doc := `{"openapi": "3.0.3", "info": {"title": "Shop", "version": "1"}, "servers": [{"url": "https://shop.example.com"}],
		"paths": {"/items/{id}": {"delete": {"operationId": "deleteItem", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
		"responses": {"204": {"description": "gone"}}}}}}`
	code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"document": json.RawMessage(doc), "consequential": false})
	if code != http.StatusOK || res["consequential"].(map[string]any)["deleteItem"] != false {
		t.Fatalf("import with consequential false: %d %v", code, res)
	}
	code, res = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"document": json.RawMessage(strings.Replace(doc, `"gone"`, `"deleted"`, 1))})
	if code != http.StatusOK || res["consequential"].(map[string]any)["deleteItem"] != false {
		t.Errorf("a later sync: %d %v, want the import's classification kept", code, res)
	}
}
