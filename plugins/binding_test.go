package plugins

import (
	"strings"
	"testing"
)

func TestDifference(t *testing.T) {
	const row = `{"name": "t", "description": "d",
		"parameters": {"type": "object", "required": ["q", "tenant"], "properties": {
			"q": {"type": "string", "description": "query"},
			"tenant": {"type": "string"},
			"description": {"type": "string", "description": "a property named description"},
			"page": {"type": "integer", "minimum": 1},
			"filter": {"type": "object", "default": {"description": "open"}}}},
		"execution": {"method": "GET", "base_url": "https://api.example/{tenant}/s"},
		"auth_config": {"type": "oauth2", "oauth2": {"token_url": "https://idp.example/t", "client_id": "ID", "client_secret": "CS"}},
		"fixed_params": {"tenant": "acme", "n": 2}}`
	tests := []struct {
		name, old, new string
		want           string
	}{
		{"itself", "", "", ""},
		{"key order, spacing, method case, defaults spelt out", `"method": "GET"`, `"type": "http", "method": "get"`, ""},
		{"oauth2 defaults spelt out", `"client_secret": "CS"`, `"client_secret": "CS", "grant": "client_credentials", "auth_style": "header"`, ""},
		{"a number spelt another way", `"n": 2`, `"n": 2.0`, ""},
		{"the required list in another order", `"required": ["q", "tenant"]`, `"required": ["tenant", "q"]`, ""},
		{"descriptions", `"description": "query"`, `"description": "查询"`, ""},
		{"an optional property left out", `,
			"page": {"type": "integer", "minimum": 1}`, "", ""},
		{"a property named description left out", `
			"description": {"type": "string", "description": "a property named description"},`, "", ""},
		{"required credentials spelt out", `"fixed_params"`, `"required_credentials": ["ID", "CS"], "fixed_params"`, ""},
		{"another base_url", "/{tenant}/s", "/{tenant}/admin", "execution.base_url"},
		{"a retry added", `"method": "GET"`, `"method": "GET", "retry": {"max_attempts": 5}`, "execution.retry"},
		{"another token_url", "https://idp.example/t", "https://evil.example/t", "auth_config.oauth2.token_url"},
		{"a fixed param removed", `, "n": 2`, "", "fixed_params.n"},
		{"fewer required credentials", `"fixed_params"`, `"required_credentials": ["CS"], "fixed_params"`, "required_credentials"},
		{"a required property left out", `"tenant": {"type": "string"},`, "", "parameters.properties.tenant"},
		{"a constraint loosened", `"minimum": 1`, `"minimum": 0`, "parameters.properties.page.minimum"},
		{"extras admitted", `"type": "object", "required"`, `"type": "object", "additionalProperties": true, "required"`, "parameters.additionalProperties"},
		{"a property added", `"tenant": {"type": "string"},`, `"tenant": {"type": "string"}, "admin": {"type": "boolean"},`, "parameters.properties.admin"},
		{"a description inside a default", `{"description": "open"}`, `{"description": "closed"}`, "parameters.properties.filter.default.description"},
		{"a required property made optional", `"required": ["q", "tenant"]`, `"required": ["q"]`, "parameters.required"},
	}
	r := mustParse(t, row)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(row, tt.old) {
				t.Fatalf("the row lacks %s", tt.old)
			}
			doc := row
			if tt.old != "" {
				doc = strings.Replace(row, tt.old, tt.new, 1)
			}
			if got := Difference(r, mustParse(t, doc)); got != tt.want {
				t.Errorf("Difference = %q, want %q", got, tt.want)
			}
		})
	}
}
