package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// apiDoc is the documentation page of the description, whose route table
// is generated from it.
const apiDoc = "../docs/api.md"

const (
	routesBegin = "<!-- routes: generated from api/openapi.json by TestAPIDocRoutes (go test ./api -run TestAPIDocRoutes -update) -->\n"
	routesEnd   = "<!-- end of routes -->\n"
)

// TestAPIDocRoutes fails when docs/api.md's route table is not the one
// the description gives (-update writes it).
func TestAPIDocRoutes(t *testing.T) {
	page, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := bytes.Cut(page, []byte(routesBegin))
	_, tail, ok2 := bytes.Cut(rest, []byte(routesEnd))
	if !ok || !ok2 {
		t.Fatalf("%s has no route table between %q and %q", apiDoc, routesBegin, routesEnd)
	}
	table, err := routeTable(openAPIDocument)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(head, []byte(routesBegin), table, []byte(routesEnd), tail)
	if *update {
		if err := os.WriteFile(apiDoc, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(page, want) {
		t.Errorf("%s's route table is not the description's: go test ./api -run TestAPIDocRoutes -update", apiDoc)
	}
}

// who says, by x-role, which tokens a route takes.
var who = map[string]string{
	"none":    "anyone",
	"user":    "per-user, service, admin",
	"service": "service, admin",
	"admin":   "admin",
}

// routeTable is the description's routes as a Markdown table: route, who
// may call it, what it does, the setting it needs, its error codes (but
// those every route of its kind answers).
func routeTable(description []byte) ([]byte, error) {
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]codedAnswer `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(description, &doc); err != nil {
		return nil, err
	}
	shared := common()
	var b bytes.Buffer
	b.WriteString("| route | who | what | error codes |\n| --- | --- | --- | --- |\n")
	for _, path := range slices.Sorted(maps.Keys(doc.Paths)) {
		item := doc.Paths[path]
		for _, method := range []string{"get", "post", "put", "patch", "delete"} {
			raw, ok := item[method]
			if !ok {
				continue
			}
			var op struct {
				Summary   string                 `json:"summary"`
				Role      string                 `json:"x-role"`
				Responses map[string]codedAnswer `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("%s %s: %w", method, path, err)
			}
			what := strings.ReplaceAll(op.Summary, "|", `\|`)
			var codes []string
			for _, status := range slices.Sorted(maps.Keys(op.Responses)) {
				r := op.Responses[status]
				if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
					r = doc.Components.Responses[name]
				}
				for _, c := range r.Codes {
					if op.Role == "none" || !shared[status+" "+c] {
						codes = append(codes, status+" `"+c+"`")
					}
				}
			}
			fmt.Fprintf(&b, "| `%s %s` | %s | %s | %s |\n", strings.ToUpper(method), path, who[op.Role], what, strings.Join(codes, ", "))
		}
	}
	return b.Bytes(), nil
}

// common are the answers every route of a kind gives (openapi_test.go),
// which the page states once rather than on every row.
func common() map[string]bool {
	out := map[string]bool{}
	for _, a := range slices.Concat(guardedAnswers, bodyAnswers, []commonAnswer{failClosedAnswer}) {
		for _, c := range a.codes {
			out[a.status+" "+c] = true
		}
	}
	return out
}

// codedAnswer is an answer's error codes, or the answer it refers to.
type codedAnswer struct {
	Ref   string   `json:"$ref"`
	Codes []string `json:"x-error-codes"`
}
