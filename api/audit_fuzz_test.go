package api

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// FuzzDescribeChange: what the audit log keeps of a change never holds a
// secret the change carried, whatever else the request holds: a
// credential's value, a client secret, an import's or a server's
// credentials and headers, the token an answer holds, a URL's userinfo,
// query, fragment or path parameter named as a credential, each of any length (n draws it from 8 characters to
// past the cut of a long argument).
func FuzzDescribeChange(f *testing.F) {
	for _, s := range []struct {
		method, path, body, query string
		n                         uint8
	}{
		{"PUT", "/v1/credentials/7/api_key", `{"value":"x"}`, "", 2},
		{"POST", "/v1/plugins/import/openapi", `{"url":"https://h.example/spec.json","prefix":"p"}`, "", 1},
		{"POST", "/v1/plugins/import/openapi", `{"url":"https://h.example/spec.json"}`, "", 40},
		{"POST", "/v1/plugins/import/mcp", `{"server":"m","credentials":{"k":"v"}}`, "", 3},
		{"POST", "/v1/mcp/servers", `{"name":"m","url":"https://h.example/mcp","headers":{"X-Key":"v"}}`, "", 5},
		{"POST", "/v1/tokens", `{"name":"t","user_id":7,"perms":["a"]}`, "", 4},
		{"PUT", "/v1/oauth/providers/gh", `{"name":"gh","client_id":"c","scopes":["repo"]}`, "", 6},
		{"DELETE", "/v1/connections/gh", ``, "user_id=7", 1},
		{"POST", "/v1/quotas/rules", `{"name":"q","calls":5,"window":"day","user_id":3}`, "", 1},
	} {
		f.Add(s.method, s.path, []byte(s.body), s.query, s.n)
	}
	const mark = "Zq9sK7wX"
	f.Fuzz(func(t *testing.T, method, path string, body []byte, query string, n uint8) {
		var req map[string]any
		if json.Unmarshal(body, &req) != nil || req == nil {
			req = map[string]any{}
		}
		decoded, _ := json.Marshal(req)
		unescapedPath, _ := url.PathUnescape(path)
		unescapedQuery, _ := url.QueryUnescape(query)
		for _, s := range []string{path, unescapedPath, query, unescapedQuery, string(body), string(decoded)} {
			if strings.Contains(s, mark[:4]) {
				return // the request names the mark itself
			}
		}
		secret := strings.Repeat(mark, 1+int(n))
		req["value"], req["client_secret"] = secret, secret
		req["credentials"] = map[string]string{"k": secret}
		req["headers"] = map[string]string{"Authorization": "Bearer " + secret}
		u, err := url.Parse("https://h.example/spec.json")
		if s, ok := req["url"].(string); ok {
			u, err = url.Parse(s)
		}
		if err == nil && u.Host != "" {
			u.User = url.User(secret)
			if n%2 == 1 {
				u.User = url.UserPassword("me", secret)
			}
			u.RawQuery, u.Fragment = "key="+secret, secret
			u.RawPath, u.Path = "", u.Path+";jsessionid="+secret // a path parameter (leftovers80)
			req["url"] = u.String()
		}
		planted, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := url.ParseQuery(query)
		d := DescribeChange(method, path, planted, []byte(`{"token_id":7,"token":"`+secret+`"}`), 7, q)
		for k, v := range d.Args {
			if strings.Contains(v, mark[:6]) {
				t.Fatalf("%s %s (a secret of %d characters): the audit's %s holds it: %q", method, path, len(secret), k, v)
			}
		}
	})
}
