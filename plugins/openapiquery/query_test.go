package openapiquery

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/plugins/openapi"
)

func loadIndex(t testing.TB, path string) *Index {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load(data, path)
	if err != nil {
		t.Fatal(err)
	}
	return NewIndex(doc)
}

// asJSON is v as encoding/json sees it, for comparisons.
func asJSON(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameJSON(t testing.TB, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	if g := asJSON(t, got); !reflect.DeepEqual(g, w) {
		gb, _ := json.MarshalIndent(g, "", "  ")
		t.Errorf("got\n%s\nwant\n%s", gb, want)
	}
}

func wantCode(t testing.TB, err error, code string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error = %v, want code %s", err, code)
	}
	return e
}

func ids(ops []OperationSummary) []string {
	var out []string
	for _, o := range ops {
		out = append(out, o.OperationID)
	}
	return out
}

func TestSearchOperations(t *testing.T) {
	x := loadIndex(t, "testdata/fastapi.json")
	all, err := x.SearchOperations(Query{Match: AllFields}, DefaultLimit)
	if err != nil || len(all) != 6 {
		t.Fatalf("empty query: %d operations, %v; want all 6", len(all), err)
	}
	for _, tc := range []struct {
		q     Query
		limit int
		want  []string
	}{
		// The seed's example: words match snake_case ids and kebab-case paths.
		{Query{Text: "purchase requisition", Match: AllFields}, 5, []string{"purchase_requisition_list"}},
		{Query{Text: "采购", Match: AllFields}, 5, []string{"purchase_requisition_list"}},
		{Query{Text: "ITEM", Match: AllFields, Method: "delete"}, 5, []string{"delete_item_items__item_id__delete"}},
		{Query{Text: "files", Match: Match{Tag: true}}, 5, []string{"create_file_files__post"}},
		{Query{Text: "by its id", Match: Match{Description: true}}, 5, []string{"read_item_items__item_id__get"}},
		{Query{Text: "by its id", Match: Match{Summary: true}}, 5, nil},
		// Equal relevance keeps document order (paths sorted).
		{Query{Text: "item", Match: AllFields, Method: "GET"}, 2, []string{"read_items_items__get", "read_item_items__item_id__get"}},
		{Query{Text: "read item id", Match: AllFields}, 5, []string{"read_item_items__item_id__get"}},
	} {
		got, err := x.SearchOperations(tc.q, tc.limit)
		if err != nil {
			t.Fatalf("%+v: %v", tc.q, err)
		}
		if !slices.Equal(ids(got), tc.want) {
			t.Errorf("%+v: got %v, want %v", tc.q, ids(got), tc.want)
		}
	}
	got, _ := x.SearchOperations(Query{Text: "purchase requisition", Match: AllFields}, 5)
	sameJSON(t, got, `[{"operationId": "purchase_requisition_list", "method": "GET", "path": "/purchase-requisition",
		"tags": ["purchase-requisition"], "summary": "采购申请列表", "description": null}]`)
	_, err = x.SearchOperations(Query{Method: "FETCH", Match: AllFields}, 5)
	wantCode(t, err, CodeInvalidArguments)
}

func TestRequestSchemaFastAPI(t *testing.T) {
	x := loadIndex(t, "testdata/fastapi.json")
	got, err := x.RequestSchema("read_item_items__item_id__get")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, got, `{"operationId": "read_item_items__item_id__get", "method": "GET", "path": "/items/{item_id}",
		"params": {
			"path": {"type": "object", "properties": {"item_id": {"type": "integer", "title": "Item Id"}}, "required": ["item_id"]},
			"query": {"type": "object", "properties": {"q": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Q"}}, "required": []},
			"header": {"type": "object", "properties": {"X-User-Id": {"type": "string", "title": "X-User-Id"}}, "required": ["X-User-Id"]},
			"cookie": {"type": "object", "properties": {"session": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Session"}}, "required": []}},
		"body": {"selectedContentType": null, "required": false, "schema": {}},
		"components": {}}`)

	got, err = x.RequestSchema("create_file_files__post")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, got.Body, `{"selectedContentType": "multipart/form-data", "required": true,
		"schema": {"properties": {"file": {"type": "string", "format": "binary", "title": "File"}}, "type": "object", "required": ["file"], "title": "Body_create_file_files__post"}}`)

	// A parameter's own description is kept on its schema.
	got, _ = x.RequestSchema("purchase_requisition_list")
	sameJSON(t, got.Params.Header.Properties["X-User-Id"], `{"type": "string", "description": "The acting user."}`)
}

func TestResponseSchemaFastAPI(t *testing.T) {
	x := loadIndex(t, "testdata/fastapi.json")
	got, err := x.ResponseSchema("read_item_items__item_id__get")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, got, `{"operationId": "read_item_items__item_id__get", "method": "GET", "path": "/items/{item_id}",
		"responses": {
			"200": {"selectedContentType": "application/json", "schema": {
				"properties": {
					"name": {"type": "string", "title": "Name"},
					"description": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Description"},
					"price": {"type": "number", "title": "Price"},
					"tax": {"anyOf": [{"type": "number"}, {"type": "null"}], "title": "Tax"}},
				"type": "object", "required": ["name", "price"], "title": "Item"}},
			"422": {"selectedContentType": "application/json", "schema": {
				"properties": {"detail": {"type": "array", "title": "Detail", "items": {
					"properties": {
						"loc": {"items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "type": "array", "title": "Location"},
						"msg": {"type": "string", "title": "Message"},
						"type": {"type": "string", "title": "Error Type"}},
					"type": "object", "required": ["loc", "msg", "type"], "title": "ValidationError"}}},
				"type": "object", "title": "HTTPValidationError"}}},
		"components": {}}`)

	got, err = x.ResponseSchema("delete_item_items__item_id__delete")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, got.Responses["204"], `{"selectedContentType": null, "schema": {}}`)
	// No application/json: the first type by the ranking (text, then by
	// name); the others are listed with their schemas (issue 17, point 9).
	sameJSON(t, got.Responses["default"], `{"selectedContentType": "text/html", "schema": {},
		"otherContentTypes": {"text/plain": {"type": "string"}}}`)
	if len(got.Responses) != 3 {
		t.Errorf("responses %v, want 204, 422 and default", got.Responses)
	}
}

// refsResolve checks that every $ref in v resolves in components, as a
// JSON pointer from a document root holding only them, and returns the
// references met. Extensions (x-*) are not schemas: their values are shown
// as written (Stripe's x-expansionResources hold $refs) and skipped.
func refsResolve(t testing.TB, v any, components map[string]any) []string {
	t.Helper()
	root := map[string]any{"components": components}
	var refs []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				refs = append(refs, ref)
				if _, ok := pointer(root, strings.TrimPrefix(ref, "#")); !ok {
					t.Errorf("$ref %s does not resolve in components", ref)
				}
			}
			for k, c := range v {
				if !strings.HasPrefix(k, "x-") {
					walk(c)
				}
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(asJSON(t, v))
	return refs
}

// pointer evaluates a JSON pointer (tests only need plain tokens).
func pointer(root any, p string) (any, bool) {
	cur := root
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[pointerUnescaper.Replace(tok)]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func TestCycles(t *testing.T) {
	x := loadIndex(t, "testdata/cycles.yaml")

	// Self-recursive: Node inlined once, its children left as $ref.
	req, err := x.RequestSchema("createNode")
	if err != nil {
		t.Fatal(err)
	}
	if ct := req.Body.SelectedContentType; ct == nil || *ct != "application/json" || !req.Body.Required {
		t.Errorf("body %+v: want application/json, required (through #/components/requestBodies)", req.Body)
	}
	sameJSON(t, req.Body.Schema, `{"type": "object", "description": "a tree node, self-recursive", "properties": {
		"value": {"type": "string"},
		"children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}`)
	sameJSON(t, req.Components, `{"schemas": {"Node": {"type": "object", "description": "a tree node, self-recursive", "properties": {
		"value": {"type": "string"},
		"children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}}`)
	refsResolve(t, req, req.Components)

	resp, err := x.ResponseSchema("createNode")
	if err != nil {
		t.Fatal(err)
	}
	if refs := refsResolve(t, resp, resp.Components); len(refs) != 2 {
		t.Errorf("refs %v, want Node's own in the response and in components", refs)
	}

	// Mutual: Person -> Company -> Person; only Person stays a $ref.
	resp, err = x.ResponseSchema("getPerson")
	if err != nil {
		t.Fatal(err)
	}
	s := asJSON(t, resp.Responses["200"].Schema)
	emp, _ := pointer(s, "/properties/employer/properties/employees/items")
	sameJSON(t, emp, `{"$ref": "#/components/schemas/Person"}`)
	schemas, _ := resp.Components["schemas"].(map[string]any)
	if len(resp.Components) != 1 || len(schemas) != 1 || schemas["Person"] == nil {
		t.Errorf("components %v, want only schemas.Person", resp.Components)
	}
	refsResolve(t, resp, resp.Components)

	// Path-item parameters by $ref.
	req, err = x.RequestSchema("getPerson")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, req.Params.Path, `{"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}, "required": ["id"]}`)
}

func TestSchemaErrors(t *testing.T) {
	x := loadIndex(t, "testdata/cycles.yaml")
	_, err := x.ResponseSchema("brokenRef")
	e := wantCode(t, err, CodeUnresolvableRef)
	if refs, _ := e.Details["refs"].([]string); !slices.Equal(refs, []string{"#/components/schemas/Missing"}) {
		t.Errorf("details %v", e.Details)
	}
	_, err = x.RequestSchema("dup")
	e = wantCode(t, err, CodeOperationNotUnique)
	if ops, _ := e.Details["operations"].([]string); !slices.Equal(ops, []string{"GET /dup/a", "POST /dup/b"}) {
		t.Errorf("details %v", e.Details)
	}
	_, err = x.ResponseSchema("nope")
	wantCode(t, err, CodeOperationNotFound)

	// An operation without an operationId goes by "METHOD /path".
	found, _ := x.SearchOperations(Query{Text: "without", Match: AllFields}, 5)
	if !slices.Equal(ids(found), []string{"GET /anon"}) {
		t.Fatalf("search: %v", ids(found))
	}
	req, err := x.RequestSchema("GET /anon")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, req.Params.Query.Properties["note"], `{"type": "string", "nullable": true}`)

	y := loadIndex(t, "testdata/nopaths.yaml")
	_, err = y.SearchOperations(Query{Match: AllFields}, 5)
	wantCode(t, err, CodeInvalidDocument)
	_, err = y.RequestSchema("x")
	wantCode(t, err, CodeInvalidDocument)
}

func TestCallPlan(t *testing.T) {
	x := loadIndex(t, "testdata/fastapi.json")
	plan, err := x.CallPlan(PlanInput{OperationID: "purchase_requisition_list",
		Query:   map[string]any{"status": "APPROVED", "page": 1.0, "pageSize": 20.0},
		Headers: map[string]any{"X-User-Id": "123"}})
	if err != nil {
		t.Fatal(err)
	}
	p := asJSON(t, plan).(map[string]any)
	sameJSON(t, p["params"], `{"path": {}, "query": {"status": "APPROVED", "page": 1, "pageSize": 20}, "headers": {"X-User-Id": "123"}, "body": null}`)
	if p["operationId"] != "purchase_requisition_list" || p["method"] != "GET" || p["path"] != "/purchase-requisition" {
		t.Errorf("plan %v", p)
	}
	exp := p["expectedResponses"].(map[string]any)
	if len(exp) != 2 || exp["200"].(map[string]any)["contentType"] != "application/json" || exp["422"] == nil {
		t.Errorf("expectedResponses %v", exp)
	}
	if _, ok := p["contentType"]; ok {
		t.Errorf("contentType %v for an operation without a body", p["contentType"])
	}

	_, err = x.CallPlan(PlanInput{OperationID: "purchase_requisition_list",
		Query: map[string]any{"status": "NOPE", "pageSize": 500.0, "foo": 1.0}})
	e := wantCode(t, err, CodeInvalidParams)
	var fields []string
	for _, fe := range asJSON(t, e.Details["errors"]).([]any) {
		fields = append(fields, fe.(map[string]any)["field"].(string))
	}
	for _, want := range []string{"headers.X-User-Id", "query.foo", "query.pageSize", "query.status"} {
		if !slices.Contains(fields, want) {
			t.Errorf("errors on %v, want one on %s (%v)", fields, want, e.Details["errors"])
		}
	}

	y := loadIndex(t, "testdata/cycles.yaml")
	plan, err = y.CallPlan(PlanInput{OperationID: "updatePet", Body: map[string]any{"name": "Rex", "age": nil}})
	if err != nil {
		t.Fatalf("nullable age: %v", err)
	}
	if ct := plan.ContentType; ct == nil || *ct != "application/json" {
		t.Errorf("contentType %v", ct)
	}
	_, err = y.CallPlan(PlanInput{OperationID: "updatePet"})
	wantCode(t, err, CodeInvalidParams)
	_, err = y.CallPlan(PlanInput{OperationID: "updatePet", Body: map[string]any{"name": ""}})
	e = wantCode(t, err, CodeInvalidParams)
	if b, _ := json.Marshal(e.Details); !strings.Contains(string(b), `"body.name"`) {
		t.Errorf("details %s, want an error on body.name", b)
	}
	// A recursive body validates too (cycles are pruned for validation).
	_, err = y.CallPlan(PlanInput{OperationID: "createNode", Body: map[string]any{"value": "a", "children": []any{map[string]any{"value": "b"}}}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCallPlanOneOf (issue 17, point 2): build_call_plan keeps oneOf, so a
// value that matches several alternatives, or none, is rejected.
func TestCallPlanOneOf(t *testing.T) {
	x := loadIndex(t, "testdata/oneof.yaml")
	if _, err := x.CallPlan(PlanInput{OperationID: "adopt", Body: map[string]any{"pet": map[string]any{"name": "Tom"}}}); err == nil {
		t.Error("a pet matching both alternatives was accepted")
	}
	if _, err := x.CallPlan(PlanInput{OperationID: "adopt", Body: map[string]any{"pet": map[string]any{"lives": 9.0}}}); err == nil {
		t.Error("a pet matching no alternative was accepted")
	}
}
