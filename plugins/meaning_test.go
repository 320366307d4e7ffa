package plugins

import (
	"errors"
	"strings"
	"testing"
)

// TestMeaningChecks: documents of the right shape that could never make a
// call work are refused, each error naming its field.
func TestMeaningChecks(t *testing.T) {
	const params = `{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"page":{"type":"integer","minimum":1},"mode":{"enum":["a","b"]}}}`
	doc := func(execution, extra string) string {
		return `{"name":"t","description":"d","parameters":` + params + `,"execution":` + execution + extra + `}`
	}
	const get = `{"method":"GET","base_url":"https://a.example/items/{id}"}`
	for _, tc := range []struct {
		name, doc string
		field     string // "" when valid
		message   string
	}{
		{"template filled by a parameter", doc(get, ""), "", ""},
		{"template naming no parameter", doc(`{"method":"GET","base_url":"https://a.example/items/{item_id}"}`, ""),
			"execution.base_url", "the template {item_id} names no parameter"},
		{"template filled by a wire name", doc(`{"method":"GET","base_url":"https://a.example/items/{item_id}","param_placement":{"id":{"in":"path","name":"item_id"}}}`, ""), "", ""},
		{"template filled by a fixed param", doc(`{"method":"GET","base_url":"https://a.example/{tenant}/items/{id}"}`, `,"fixed_params":{"tenant":"acme"}`), "", ""},
		{"fixed params that fit", doc(get, `,"fixed_params":{"page":2,"mode":"a"}`), "", ""},
		{"fixed param of the wrong type", doc(get, `,"fixed_params":{"page":"two"}`), "fixed_params.page", "must be an integer, not a string"},
		{"fixed param out of range", doc(get, `,"fixed_params":{"page":0}`), "fixed_params.page", "must be at least 1"},
		{"fixed param outside its enum", doc(get, `,"fixed_params":{"mode":"c"}`), "fixed_params.mode", "must be one of"},
		{"fixed param where none may be added", `{"name":"t","description":"d","parameters":{"type":"object","additionalProperties":false,"properties":{"q":{}}},"execution":{"method":"GET","base_url":"https://a.example/"},"fixed_params":{"x":1}}`,
			"fixed_params.x", "is not a known property"},
		{"required credential read by the auth config", doc(get, `,"auth_config":{"type":"bearer","token":"TOK"},"required_credentials":["TOK"]`), "", ""},
		{"required credential read by nothing", doc(get, `,"auth_config":{"type":"bearer","token":"TOK"},"required_credentials":["TOK","TOKEN"]`),
			"required_credentials[1]", `"TOKEN" is read by nothing: auth_config reads only TOK`},
		{"required credential without auth", doc(get, `,"required_credentials":["KEY"]`),
			"required_credentials[0]", "auth_config reads no credential"},
		{"oauth2 fields read", doc(get, `,"auth_config":{"type":"oauth2","oauth2":{"token_url":"https://a.example/token","client_id":"CID","client_secret":"CS"}},"required_credentials":["CID","CS"]`), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v, want a ValidationError", err)
			}
			for _, f := range ve.Fields {
				if f.Field == tc.field && strings.Contains(f.Message, tc.message) {
					return
				}
			}
			t.Fatalf("fields %+v lack %s: …%s…", ve.Fields, tc.field, tc.message)
		})
	}
}
