package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// pathValues fill a described path's parameters for requests that only
// need to reach the route's token check.
var pathValues = strings.NewReplacer("{name}", "x", "{user_id}", "7", "{key}", "K", "{run_id}", "r1",
	"{id}", "1", "{provider}", "acme", "{mcp_id}", "m", "{tool_name}", "t", "{handle}", "h")

// TestEveryRouteTakesItsTokens (SPEC §10: every route but /healthz,
// /readyz, GET /v1/openapi.json and the OAuth flow's pages requires a
// bearer token): every operation of the description is asked without a
// token, with a per-user token, and with the service token, and answers
// as its x-role says — 401 without a token unless the role is none, 403
// to a per-user token on a service or administrator route and to the
// service token on an administrator route. The description's roles are
// what docs/api.md's table and the generated clients tell callers, so a
// route whose check differs from its role is found here, whichever is
// wrong; and the routes open to anyone are exactly the contract's.
func TestEveryRouteTakesItsTokens(t *testing.T) {
	doc := describedPaths(t)
	open := map[string]bool{"GET /healthz": true, "GET /readyz": true, "GET /v1/openapi.json": true,
		"GET /oauth/start/{handle}": true, "GET /oauth/callback": true, "POST /oauth/confirm": true}
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newConnectEnv(t, st, func(s *api.Server) {
			s.MCP = &api.MCPConfig{}
			s.OpenAPITools = http.NotFoundHandler() // behind the token check: never reached
		})
		user, _, err := api.IssueToken(context.Background(), st, 7, "spec75", 0, "")
		if err != nil {
			t.Fatal(err)
		}
		for path, item := range doc.Paths {
			for method, rawOp := range item {
				var op struct {
					Role string `json:"x-role"`
				}
				if json.Unmarshal(rawOp, &op) != nil || op.Role == "" {
					continue // parameters, summary: not an operation
				}
				method = strings.ToUpper(method)
				route := method + " " + path
				if (op.Role == "none") != open[route] {
					t.Errorf("%s: x-role %q; the contract opens exactly %v to anyone", route, op.Role, keys(open))
				}
				var body any
				if method == "POST" || method == "PUT" || method == "PATCH" {
					body = map[string]any{}
				}
				ask := func(token string, want int) {
					t.Helper()
					code, answer := e.do(method, pathValues.Replace(path), token, body)
					if code != want {
						t.Errorf("%s with %s: %d %v, want %d (x-role %s)", route, tokenKind(token, user), code, answer, want, op.Role)
					}
				}
				if op.Role == "none" {
					continue
				}
				ask("", http.StatusUnauthorized)
				if op.Role == "service" || op.Role == "admin" {
					ask(user, http.StatusForbidden)
				}
				if op.Role == "admin" {
					ask(serviceToken, http.StatusForbidden)
				}
			}
		}
	})
}

func tokenKind(token, user string) string {
	switch token {
	case "":
		return "no token"
	case user:
		return "a per-user token"
	case serviceToken:
		return "the service token"
	}
	return "a token"
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
