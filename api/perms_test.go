package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestSetPerms: an administrator sets the permissions a plugin needs in
// its document (POST, PUT) and in bulk by name, by tag and by import
// source (POST /v1/plugins/perms), disabled plugins included; null
// clears them; malformed strings are refused naming the item; a sync of
// the source keeps them (issue 46 point 1).
func TestSetPerms(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		plugin := func(name string, extra map[string]any) map[string]any {
			p := map[string]any{"name": name, "description": "d", "parameters": map[string]any{"type": "object"},
				"execution": map[string]any{"method": "GET", "base_url": "https://api.example.com/" + name}}
			for k, v := range extra {
				p[k] = v
			}
			return p
		}
		if code, res := e.do("POST", "/v1/plugins", adminToken, plugin("list_users", map[string]any{"perms": []string{"system:user:list"}})); code != http.StatusCreated {
			t.Fatalf("create with perms: %d %v", code, res)
		}
		if code, res := e.do("POST", "/v1/plugins", adminToken, plugin("bad", map[string]any{"perms": []string{"system:user:*"}})); code != http.StatusBadRequest ||
			!strings.Contains(fmt.Sprint(res), "perms[0]") {
			t.Errorf("create with a partial wildcard: %d %v, want 400 naming perms[0]", code, res)
		}
		if code, res := e.do("POST", "/v1/plugins", adminToken, plugin("drop_table", map[string]any{"tags": []string{"danger"}, "status": "1"})); code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, res)
		}
		doc := `{"openapi": "3.0.3", "info": {"title": "Shop", "version": "1"}, "servers": [{"url": "https://shop.example.com"}],
		"paths": {"/items": {"get": {"operationId": "listItems", "responses": {"200": {"description": "ok"}}},
		"post": {"operationId": "addItem", "responses": {"200": {"description": "ok"}}}}}}`
		code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"document": json.RawMessage(doc)})
		if code != http.StatusOK {
			t.Fatalf("import: %d %v", code, res)
		}
		row, err := st.GetPlugin(t.Context(), "listItems")
		if err != nil || row.SourceID == nil {
			t.Fatalf("imported row: %v %v", row, err)
		}
		perms := func(name string) []string {
			t.Helper()
			code, res := e.do("GET", "/v1/plugins/"+name, adminToken, nil)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d %v", name, code, res)
			}
			var out []string
			if ps, ok := res["perms"].([]any); ok {
				for _, p := range ps {
					out = append(out, p.(string))
				}
			}
			return out
		}
		set := func(body map[string]any, want int) map[string]any {
			t.Helper()
			code, res := e.do("POST", "/v1/plugins/perms", adminToken, body)
			if code != want {
				t.Fatalf("POST /v1/plugins/perms %v: %d %v, want %d", body, code, res, want)
			}
			return res
		}
		res = set(map[string]any{"sources": []int64{*row.SourceID}, "tags": []string{"danger"}, "perms": []string{"shop:item:list", "*:*:*"}}, http.StatusOK)
		if res["updated"] != 3.0 {
			t.Errorf("by source and tag: %v, want 3 plugins (the disabled one too)", res)
		}
		for _, name := range []string{"listItems", "addItem", "drop_table"} {
			if got := perms(name); !slices.Equal(got, []string{"shop:item:list", "*:*:*"}) {
				t.Errorf("%s: perms %v", name, got)
			}
		}
		if got := perms("list_users"); !slices.Equal(got, []string{"system:user:list"}) {
			t.Errorf("list_users, not selected: perms %v", got)
		}
		set(map[string]any{"names": []string{"addItem"}, "perms": nil}, http.StatusOK)
		if got := perms("addItem"); got != nil {
			t.Errorf("addItem after null: perms %v", got)
		}
		code, res = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"document": json.RawMessage(strings.Replace(doc, `"ok"`, `"fine"`, 1))})
		if code != http.StatusOK {
			t.Fatalf("sync: %d %v", code, res)
		}
		if got := perms("listItems"); !slices.Equal(got, []string{"shop:item:list", "*:*:*"}) {
			t.Errorf("listItems after a sync: perms %v", got)
		}
		for _, tt := range []struct {
			body map[string]any
			want string
		}{
			{map[string]any{"names": []string{"listItems"}}, "perms: expected"},
			{map[string]any{"names": []string{"listItems"}, "perms": "a:b"}, "perms: expected"},
			{map[string]any{"perms": []string{"a:b"}}, "names, tags or sources"},
			{map[string]any{"names": []string{"list items"}, "perms": []string{"a:b"}}, "names[0]"},
			{map[string]any{"sources": []int{0}, "perms": []string{"a:b"}}, "sources[0]"},
			{map[string]any{"names": []string{"listItems"}, "perms": []string{"a:b", "system:user"}}, ""},
			{map[string]any{"names": []string{"listItems"}, "perms": []string{"a:b", "system user"}}, "perms[1]"},
		} {
			want := http.StatusBadRequest
			if tt.want == "" {
				want = http.StatusOK
			}
			if res := set(tt.body, want); !strings.Contains(fmt.Sprint(res), tt.want) {
				t.Errorf("%v: %v, want it to say %q", tt.body, res, tt.want)
			}
		}
		if code, _ := e.do("POST", "/v1/plugins/perms", serviceToken, map[string]any{"names": []string{"listItems"}, "perms": nil}); code != http.StatusForbidden {
			t.Errorf("the service token set perms: %d, want 403", code)
		}
	})
}
