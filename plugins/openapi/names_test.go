package openapi

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	long := strings.Repeat("veryLongOperationName", 5) // 105 characters
	doc := fmt.Sprintf(`{"openapi": "3.0.0", "info": {"title": "T"}, "servers": [{"url": "https://x.example.com"}],
	"paths": {
		"/a": {"get": {"operationId": %[1]q}, "post": {"operationId": %[1]q}},
		"/b": {"get": {"operationId": "dup"}, "put": {"operationId": "dup"}, "post": {"operationId": "dup_bd0e04"}},
		"/c/{id}.json": {"get": {}, "delete": {"operationId": "  remove  item! "}},
		"/springdoc/items": {"get": {"operationId": "list_5"}, "post": {"operationId": "add_3"}},
		"/nest": {"get": {"operationId": "AppController_findAll"}},
		"/fast/{item_id}": {"get": {"operationId": "read_item_fast__item_id__get"}, "put": {"operationId": "fast__item_id__put"}},
		"/v2": {"get": {"operationId": "getV2"}},
		"/d": {"get": {"operationId": "search_tools"}, "post": {"operationId": "call_tool"}}
	}}`, long)
	names := func(prefix string) map[string]string {
		d, err := Load([]byte(doc), "names.json")
		if err != nil {
			t.Fatal(err)
		}
		ops, failures, err := Convert(d, Options{Prefix: prefix})
		if err != nil || len(failures) > 0 {
			t.Fatalf("Convert: %v %v", failures, err)
		}
		m := map[string]string{}
		for _, op := range ops {
			m[op.Key] = op.Plugin.Name
		}
		return m
	}
	got := names("")
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	seen := map[string]string{}
	for key, name := range got {
		if !valid.MatchString(name) {
			t.Errorf("%s: name %q is not valid", key, name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s are both %q", key, other, name)
		}
		seen[name] = key
	}
	want := map[string]string{
		"GET /b":              "dup",
		"DELETE /c/{id}.json": "remove_item",
		"GET /c/{id}.json":    "get_c_id_json",
		// Issue 17, point 7: machine-made operationIds give way to method
		// and path; FastAPI's generated ones to the function's name.
		"GET /springdoc/items":  "get_springdoc_items",
		"POST /springdoc/items": "post_springdoc_items",
		"GET /nest":             "get_nest",
		"GET /fast/{item_id}":   "read_item",
		"PUT /fast/{item_id}":   "fast__item_id__put",
		"GET /v2":               "getV2",
	}
	for key, name := range want {
		if got[key] != name {
			t.Errorf("%s: name %q, want %q", key, got[key], name)
		}
	}
	for _, key := range []string{"GET /d", "POST /d"} { // the meta-tools' reserved names
		if n := got[key]; n == "search_tools" || n == "call_tool" || !regexp.MustCompile(`^(search_tools|call_tool)_[0-9a-f]{6}$`).MatchString(n) {
			t.Errorf("%s: %q, want the reserved name with a hash suffix", key, n)
		}
	}
	for _, key := range []string{"GET /a", "POST /a"} {
		if n := got[key]; len(n) != 64 || !strings.HasPrefix(n, long[:50]) {
			t.Errorf("%s: %q (%d characters), want the operationId cut to 64 with a hash", key, n, len(n))
		}
	}
	if got["PUT /b"] == "dup" || !strings.HasPrefix(got["PUT /b"], "dup_") {
		t.Errorf("PUT /b: %q, want dup with a hash suffix", got["PUT /b"])
	}
	// The same document names the same way every time.
	for i := 0; i < 3; i++ {
		if again := names(""); fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("names differ between runs:\n%v\n%v", got, again)
		}
	}
	if p := names("my api")["GET /b"]; p != "my_api_dup" {
		t.Errorf("with prefix: %q, want my_api_dup", p)
	}
}

func TestUpperSnake(t *testing.T) {
	for in, want := range map[string]string{
		"Stripe API": "STRIPE_API", "basicAuth": "BASICAUTH", "api-key (v2)": "API_KEY_V2", "  ": "",
	} {
		if got := upperSnake(in); got != want {
			t.Errorf("upperSnake(%q) = %q, want %q", in, got, want)
		}
	}
}
