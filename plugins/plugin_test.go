package plugins

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseSeedExample(t *testing.T) {
	data, err := os.ReadFile("testdata/seed001.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data)
	if err != nil {
		t.Fatalf("seed 001 example (with // comments) must load unchanged: %v", err)
	}
	if p.Name != "search_company_basic" || p.Execution.Method != "GET" || p.Execution.ParamPlacement.Default != InQuery {
		t.Fatalf("parsed %+v", p)
	}
	if got, want := p.Credentials(), []string{"QCC_KEY", "QCC_SECRET"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("derived required_credentials = %v, want %v", got, want)
	}
	args := map[string]any{"keyword": "字节跳动"}
	if errs := p.ValidateArguments(args); errs != nil {
		t.Fatalf("valid args rejected: %v", errs)
	}
}

func TestValidationNamesTheField(t *testing.T) {
	base := `{"name":"t","description":"d","parameters":{"type":"object","properties":{"id":{"type":"string"}}},
	"execution":{"method":"GET","base_url":"https://api.example.com/x"}}`
	tests := []struct {
		name  string
		patch func(m map[string]any)
		want  string
	}{
		{"method", func(m map[string]any) { exec(m)["method"] = "FETCH" }, `execution.method: "FETCH" is not an HTTP method`},
		{"name", func(m map[string]any) { m["name"] = strings.Repeat("a", 65) }, `name: `},
		{"name chars", func(m map[string]any) { m["name"] = "rb.answer" }, `name: `},
		{"reserved search_tools", func(m map[string]any) { m["name"] = "search_tools" }, `name: "search_tools" is reserved`},
		{"reserved call_tool", func(m map[string]any) { m["name"] = "call_tool" }, `name: "call_tool" is reserved`},
		{"relative url", func(m map[string]any) { exec(m)["base_url"] = "/x" }, `execution.base_url: "/x" must be an absolute http or https URL`},
		{"host template", func(m map[string]any) { exec(m)["base_url"] = "https://{host}/x" }, `execution.base_url: "https://{host}/x": templates are allowed in the path only`},
		{"placement", func(m map[string]any) { exec(m)["param_placement"] = "url" }, `execution.param_placement`},
		{"path without template", func(m map[string]any) { exec(m)["param_placement"] = map[string]any{"id": "path"} }, `execution.param_placement.id: placed in the path but execution.base_url has no {id} template`},
		{"unknown field", func(m map[string]any) { exec(m)["param_placment"] = "query" }, `execution: `},
		{"auth type", func(m map[string]any) { m["auth_config"] = map[string]any{"type": "digest"} }, `auth_config.type`},
		{"basic fields", func(m map[string]any) { m["auth_config"] = map[string]any{"type": "basic", "username": "U"} }, `auth_config.password: required for type "basic"`},
		{"oauth2 token_url", func(m map[string]any) {
			m["auth_config"] = map[string]any{"type": "oauth2", "oauth2": map[string]any{"client_id": "A", "client_secret": "B"}}
		}, `auth_config.oauth2.token_url: required`},
		// leftovers80: its userinfo refused, as a base_url's, and never quoted.
		{"oauth2 token_url userinfo", func(m map[string]any) {
			m["auth_config"] = map[string]any{"type": "oauth2", "oauth2": map[string]any{"token_url": "https://u:pw-Tk80@idp.example/token", "client_id": "A", "client_secret": "B"}}
		}, `auth_config.oauth2.token_url: must not carry credentials`},
		{"oauth2 token_url userinfo unparsed", func(m map[string]any) {
			m["auth_config"] = map[string]any{"type": "oauth2", "oauth2": map[string]any{"token_url": "https://u:pw/Tk80@idp.example/token", "client_id": "A", "client_secret": "B"}}
		}, `auth_config.oauth2.token_url: "https://…@idp.example/token" must be an absolute http or https URL`},
		// review81: a URL without a scheme, whose authority net/url reads.
		{"base_url userinfo without a scheme", func(m map[string]any) { exec(m)["base_url"] = "//u:pw-Tk80@api.example.com/x" },
			`execution.base_url: "//…@api.example.com/x" must be an absolute http or https URL`},
		// Issue 34: a user's connection to a registered provider.
		{"authorization_code provider", func(m map[string]any) {
			m["auth_config"] = map[string]any{"type": "oauth2", "oauth2": map[string]any{"grant": "authorization_code", "scopes": []string{"repo"}}}
		}, `auth_config.oauth2.provider: required for grant "authorization_code"`},
		{"authorization_code token_url", func(m map[string]any) {
			m["auth_config"] = map[string]any{"type": "oauth2", "oauth2": map[string]any{"grant": "authorization_code", "provider": "github", "token_url": "https://x/t"}}
		}, `auth_config.oauth2.token_url: must be empty for grant "authorization_code"`},
		{"authorization_code scope", func(m map[string]any) {
			m["auth_config"] = map[string]any{"type": "oauth2", "oauth2": map[string]any{"grant": "authorization_code", "provider": "github", "scopes": []string{"a b"}}}
		}, `auth_config.oauth2.scopes[0]: "a b" is not a scope`},
		{"oauth2 grant", func(m map[string]any) {
			m["auth_config"] = map[string]any{"type": "oauth2", "oauth2": map[string]any{"grant": "password"}}
		}, `auth_config.oauth2.grant`},
		{"mapping location", func(m map[string]any) {
			m["auth_config"] = map[string]any{"type": "api_key", "mapping": []any{map[string]any{"source": "K", "target": "T", "location": "body"}}}
		}, `auth_config.mapping[0].location`},
		{"parameters root", func(m map[string]any) { m["parameters"] = map[string]any{"type": "array"} }, `parameters`},
		{"header injection", func(m map[string]any) { exec(m)["headers"] = map[string]any{"X-A": "a\r\nHost: evil"} }, `execution.headers.X-A: must not contain CR, LF or NUL`},
		{"mcp fields", func(m map[string]any) { exec(m)["type"] = "mcp" }, `execution.mcp_id: required`},
		// Issue 30: free text within the catalog's columns.
		{"title", func(m map[string]any) { m["title"] = strings.Repeat("é", 256) }, `title: maxLength: got 256, want 255`},
		{"description", func(m map[string]any) { m["description"] = strings.Repeat("d", 16_001) }, `description: maxLength: got 16,001, want 16,000`},
		// Issue 46: permission strings in RuoYi's form.
		{"perms form", func(m map[string]any) { m["perms"] = []string{"system:user:list", "system user"} }, `perms[1]: "system user": expected a RuoYi permission string`},
		{"perms wildcard", func(m map[string]any) { m["perms"] = []string{"system:user:*"} }, `perms[0]: "system:user:*": RuoYi matches permission strings exactly`},
		{"perms twice", func(m map[string]any) { m["perms"] = []string{"a:b", "a:b"} }, `perms[1]: "a:b" is listed twice`},
		{"perms type", func(m map[string]any) { m["perms"] = "system:user:list" }, `perms: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal([]byte(base), &m); err != nil {
				t.Fatal(err)
			}
			tt.patch(m)
			b, _ := json.Marshal(m)
			_, err := Parse(b)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a ValidationError, got %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "Tk80") {
				t.Fatalf("error %q does not contain %q, or quotes a password", err, tt.want)
			}
		})
	}
}

func TestCut(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 3, "abc"}, {"abcd", 3, "ab…"}, {"ééé", 3, "ééé"}, {"éééé", 3, "éé…"}} {
		if got := Cut(tt.s, tt.n); got != tt.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func exec(m map[string]any) map[string]any { return m["execution"].(map[string]any) }

func TestValidateArgumentsMessages(t *testing.T) {
	p := mustParse(t, `{"name":"t","description":"d","execution":{"method":"GET","base_url":"https://a.example/x"},
	"parameters":{"type":"object","required":["keyword"],"properties":{
		"keyword":{"type":"string"},"page":{"type":"integer","minimum":1},
		"tag":{"type":"string","nullable":true},"opts":{"type":"object","properties":{"mode":{"enum":["a","b"]}}},
		"qty":{"type":"integer","exclusiveMinimum":0},"code":{"type":"string","pattern":"^[0-9]+$"},
		"pet":{"oneOf":[{"properties":{"kind":{"const":"cat"}},"required":["kind"]},{"properties":{"kind":{"enum":["cat","dog"]}},"required":["kind"]}]}}}}`)
	tests := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"keyword": "x", "tag": nil}, nil},
		{map[string]any{}, []string{"keyword is required"}},
		{map[string]any{"keyword": 3}, []string{"keyword must be a string, not a number"}},
		{map[string]any{"keyword": "x", "page": 0}, []string{"page must be at least 1"}},
		{map[string]any{"keyword": "x", "opts": map[string]any{"mode": "c"}}, []string{`opts.mode must be one of "a", "b"`}},
		{map[string]any{"keyword": "x", "qty": 0}, []string{"qty must be greater than 0"}},
		{map[string]any{"keyword": "x", "pet": map[string]any{"kind": "cat", "lives": 9, "bark": true}}, []string{"pet matches more than one of the allowed shapes (1 and 2)"}},
		{map[string]any{"keyword": "x", "pet": map[string]any{"kind": "cow"}}, []string{`pet matches none of the allowed shapes (1: kind must be "cat"; 2: kind must be one of "cat", "dog")`}},
		{map[string]any{"keyword": "secret-value", "code": "secret-value"}, []string{"code must match the pattern ^[0-9]+$"}},
	}
	for _, tt := range tests {
		errs := p.ValidateArguments(tt.args)
		if tt.want == nil {
			if errs != nil {
				t.Errorf("%v: unexpected %v", tt.args, errs)
			}
			continue
		}
		var sentences []string
		for _, fe := range errs {
			sentences = append(sentences, fe.Sentence())
		}
		got := strings.Join(sentences, "; ")
		if strings.Contains(got, "secret-value") {
			t.Errorf("%v: the message quotes the argument's value: %q", tt.args, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: %q lacks %q", tt.args, got, w)
			}
		}
	}
}

func TestLLMViewHidesFixedParams(t *testing.T) {
	p := mustParse(t, `{"name":"t","description":"d","execution":{"method":"GET","base_url":"https://a.example/x"},
	"fixed_params":{"disease_id":"disease_000001"},
	"parameters":{"type":"object","required":["disease_id","q"],"properties":{"disease_id":{"type":"string"},"q":{"type":"string"}}}}`)
	tool := p.Tool(map[string]any{"q": "bound"})
	b, _ := json.Marshal(tool)
	if strings.Contains(string(b), "disease_id") || strings.Contains(string(b), `"q"`) {
		t.Fatalf("fixed params leak into the LLM view: %s", b)
	}
	if strings.Contains(string(b), "execution") || strings.Contains(string(b), "a.example") {
		t.Fatalf("execution leaks into the LLM view: %s", b)
	}
}

func TestPlacement(t *testing.T) {
	p := mustParse(t, `{"name":"t","description":"d","parameters":{"type":"object","properties":{"id":{"type":"string"}}},
	"execution":{"method":"POST","base_url":"https://a.example/users/{id}/items",
	"param_placement":{"q":"query","tok":{"in":"header","name":"X-Tok"},"tags":{"in":"query","style":"pipeDelimited","explode":false}}}}`)
	e := &p.Execution
	cases := map[string]ArgPlacement{
		"id":    {In: InPath},
		"q":     {In: InQuery},
		"tok":   {In: InHeader, Name: "X-Tok"},
		"other": {In: InBody},
	}
	for name, want := range cases {
		if got := e.PlacementOf(name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v want %+v", name, got, want)
		}
	}
	if got := e.PlacementOf("tags"); got.Style != "pipeDelimited" || got.Explode == nil || *got.Explode {
		t.Errorf("tags: %+v", got)
	}
	// Round trip keeps the shape.
	b, _ := json.Marshal(p)
	q, err := ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q.Execution.ParamPlacement, p.Execution.ParamPlacement) {
		t.Fatalf("round trip changed placement: %+v", q.Execution.ParamPlacement)
	}
}

func mustParse(t *testing.T, s string) *Plugin {
	t.Helper()
	p, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func FuzzParse(f *testing.F) {
	seed, _ := os.ReadFile("testdata/seed001.jsonc")
	f.Add(seed)
	f.Add([]byte(`{"name":"x","parameters":{"type":"object"},"execution":{"param_placement":{"a":{"in":"path"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		// A document that parses is valid and re-parses to the same tool.
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseJSON(b); err != nil {
			t.Fatalf("re-parse of a valid plugin failed: %v\n%s", err, b)
		}
	})
}
