package api

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestExecuteSectionComplete: docs/api-routes.md's section on POST
// /v1/execute, the route RuoYi's side calls, names every status and every
// error code the description gives that route, so a Java caller reading
// the page handles each answer; and every error code the page names after
// a status ("404 `agent_not_found`") is one the description lists for that
// status on some route.
func TestExecuteSectionComplete(t *testing.T) {
	page, err := os.ReadFile("../docs/api-routes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## `POST /v1/execute`\n")
	if !ok {
		t.Fatal("docs/api-routes.md has no section ## `POST /v1/execute`")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]response `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	resolve := func(r response) response {
		if r.Ref != "" {
			return doc.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
		}
		return r
	}
	op := func(raw json.RawMessage) operation {
		var o operation
		json.Unmarshal(raw, &o) // a path's parameters: no responses
		return o
	}
	for status, r := range op(doc.Paths["/v1/execute"]["post"]).Responses {
		if status != "200" && !regexp.MustCompile(`\b`+status+`\b`).MatchString(section) {
			t.Errorf("the section does not name the status %s", status)
		}
		for _, code := range resolve(r).Codes {
			if !strings.Contains(section, "`"+code+"`") {
				t.Errorf("the section does not name the error code %s (%s)", code, status)
			}
		}
	}
	described := map[string][]string{}
	for _, item := range doc.Paths {
		for _, raw := range item {
			for status, r := range op(raw).Responses {
				described[status] = append(described[status], resolve(r).Codes...)
			}
		}
	}
	for _, m := range regexp.MustCompile("\\b([45]\\d\\d) `([a-z_]+)`").FindAllStringSubmatch(string(page), -1) {
		if !slices.Contains(described[m[1]], m[2]) {
			t.Errorf("docs/api-routes.md: %s %s: no route of the description answers that code with that status", m[1], m[2])
		}
	}
}

type operation struct {
	Responses map[string]response `json:"responses"`
}

type response struct {
	Ref   string   `json:"$ref"`
	Codes []string `json:"x-error-codes"`
}
