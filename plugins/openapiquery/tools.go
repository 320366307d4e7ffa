package openapiquery

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/toolsearch"
)

// ToolNames are the server's tools: seed 000's three and build_call_plan,
// then seed 003's six.
var ToolNames = []string{
	"search_operations", "get_request_schema", "get_response_schema", "build_call_plan",
	"get_api_info", "list_endpoints", "search_endpoints", "get_endpoint_details", "list_schemas", "get_schema_details",
}

const specPathProp = `"spec_path": {"type": "string", "description": "URL (or, on a local server, file path) of the OpenAPI document; optional when the server has a default document"}`

func (s *server) tools() []toolDef {
	return []toolDef{
		seed000("search_operations",
			"Search the API's operations by tag, operationId, path, summary and description (case-insensitive; every word of the query must match). An empty query lists every operation. Returns [{operationId, method, path, tags, summary, description}], most relevant first.",
			`{"type": "object", "properties": {
				"query": {"type": "string", "description": "words to look for; empty lists everything"},
				"match": {"type": "object", "description": "fields to search; each defaults to true", "properties": {
					"tag": {"type": "boolean"}, "operationId": {"type": "boolean"}, "path": {"type": "boolean"},
					"summary": {"type": "boolean"}, "description": {"type": "boolean"}}, "additionalProperties": false},
				"method": {"type": ["string", "null"], "enum": ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE", null], "description": "only operations of this method; null for any"},
				"limit": {"type": "integer", "minimum": 1, "default": 50},
				`+specPathProp+`}}`,
			s.searchOperations),
		seed000("get_request_schema",
			"The request of an operation: path, query, header and cookie parameters as JSON Schema objects with required lists, and the body with its selected content type. $refs are expanded inline; those left (cycles) are resolved by components.",
			operationIDSchema, s.requestSchema),
		seed000("get_response_schema",
			"The responses of an operation: for every status code and default, the selected content type and the schema (null and {} without content). $refs are expanded inline; those left (cycles) are resolved by components.",
			operationIDSchema, s.responseSchema),
		seed000("build_call_plan",
			"Turn the chosen operation and the values for its parameters and body into the call plan for the business layer's executor: {operationId, method, path, params: {path, query, headers, body}, expectedResponses}. The values are validated against the request schema; each wrong field is reported.",
			`{"type": "object", "required": ["operationId"], "properties": {
				"operationId": {"type": "string"},
				"params": {"type": "object", "properties": {
					"path": {"type": "object"}, "query": {"type": "object"}, "headers": {"type": "object"},
					"cookies": {"type": "object"}, "body": {}}, "additionalProperties": false},
				`+specPathProp+`}}`,
			s.callPlan),

		seed003("get_api_info", "The API's title, version, description and OpenAPI version.",
			`{"type": "object", "properties": {`+specPathProp+`}}`, s.apiInfo),
		seed003("list_endpoints", "List the API's endpoints, optionally of one method or tag, a page at a time.",
			`{"type": "object", "properties": {`+specPathProp+`,
				"method": {"type": "string", "enum": ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE"]},
				"tag": {"type": "string"},
				"limit": {"type": "integer", "minimum": 1, "default": 50},
				"offset": {"type": "integer", "minimum": 0, "default": 0}}}`, s.listEndpoints),
		seed003("search_endpoints", "Full-text search over the endpoints, most relevant first.",
			`{"type": "object", "required": ["query"], "properties": {`+specPathProp+`,
				"query": {"type": "string"},
				"searchIn": {"type": "string", "enum": ["all", "path", "summary", "description", "tags"], "default": "all"},
				"limit": {"type": "integer", "minimum": 1, "default": 50}}}`, s.searchEndpoints),
		seed003("get_endpoint_details", "An endpoint's parameters, request body, responses and security, references to parameters, bodies and responses followed.",
			`{"type": "object", "required": ["path", "method"], "properties": {`+specPathProp+`,
				"path": {"type": "string"}, "method": {"type": "string"}}}`, s.endpointDetails),
		seed003("list_schemas", "List the names of the API's schemas (components.schemas), a page at a time.",
			`{"type": "object", "properties": {`+specPathProp+`,
				"limit": {"type": "integer", "minimum": 1, "default": 50},
				"offset": {"type": "integer", "minimum": 0, "default": 0}}}`, s.listSchemas),
		seed003("get_schema_details", "A schema's type, properties, required properties, description and the schemas it depends on.",
			`{"type": "object", "required": ["name"], "properties": {`+specPathProp+`,
				"name": {"type": "string"}}}`, s.schemaDetails),
	}
}

const operationIDSchema = `{"type": "object", "required": ["operationId"], "properties": {
	"operationId": {"type": "string", "description": "as search_operations gives it"},
	` + specPathProp + `}}`

// queryTooLong says why a query over the limit is refused, naming the
// limit; "" for a query within it.
func (s *server) queryTooLong(q string) string {
	if err := toolsearch.CheckQuery(q, s.opts.MaxQueryChars); err != nil {
		return strings.TrimPrefix(err.Error(), "query: ")
	}
	return ""
}

func (s *server) searchOperations(ctx context.Context, a args) (any, error) {
	loc, err := s.location(a)
	if err != nil {
		return nil, err
	}
	q := Query{Match: AllFields}
	if q.Text, err = a.str("query"); err != nil {
		return nil, invalidArgument("query", "must be a string", a["query"])
	}
	if msg := s.queryTooLong(q.Text); msg != "" {
		return nil, invalidArgument("query", msg, len(q.Text))
	}
	match, ok := a.object("match")
	if !ok {
		return nil, invalidArgument("match", "must be an object of booleans", a["match"])
	}
	fields := map[string]*bool{"tag": &q.Match.Tag, "operationId": &q.Match.OperationID, "path": &q.Match.Path,
		"summary": &q.Match.Summary, "description": &q.Match.Description}
	for k, v := range match {
		f := fields[k]
		if f == nil {
			return nil, invalidArgument("match", "has an unknown field "+quote(k)+" (want tag, operationId, path, summary, description)", match)
		}
		b, ok := v.(bool)
		if !ok {
			return nil, invalidArgument("match."+k, "must be a boolean", v)
		}
		*f = b
	}
	if q.Method, err = a.str("method"); err != nil {
		return nil, invalidArgument("method", "must be an HTTP method or null", a["method"])
	}
	if _, ok := validMethod(q.Method); q.Method != "" && !ok {
		return nil, invalidArgument("method", "must be an HTTP method or null", q.Method)
	}
	limit, ok := a.int("limit", DefaultLimit, 1)
	if !ok {
		return nil, invalidArgument("limit", "must be a positive integer", a["limit"])
	}
	idx, err := s.load(ctx, loc)
	if err != nil {
		return nil, err
	}
	return idx.SearchOperations(q, limit)
}

// operationID reads the operationId every seed 000 tool but the search
// takes.
func operationID(a args) (string, error) {
	id, err := a.str("operationId")
	if err != nil || id == "" {
		return "", invalidArgument("operationId", "is required (a string, as search_operations gives it)", a["operationId"])
	}
	return id, nil
}

func (s *server) requestSchema(ctx context.Context, a args) (any, error) {
	idx, id, err := s.operationCall(ctx, a)
	if err != nil {
		return nil, err
	}
	return idx.RequestSchema(id)
}

func (s *server) responseSchema(ctx context.Context, a args) (any, error) {
	idx, id, err := s.operationCall(ctx, a)
	if err != nil {
		return nil, err
	}
	return idx.ResponseSchema(id)
}

// operationCall reads the document and operationId of a seed 000 tool.
func (s *server) operationCall(ctx context.Context, a args) (*Index, string, error) {
	loc, err := s.location(a)
	if err != nil {
		return nil, "", err
	}
	id, err := operationID(a)
	if err != nil {
		return nil, "", err
	}
	idx, err := s.load(ctx, loc)
	return idx, id, err
}

func (s *server) callPlan(ctx context.Context, a args) (any, error) {
	loc, err := s.location(a)
	if err != nil {
		return nil, err
	}
	in := PlanInput{}
	if in.OperationID, err = operationID(a); err != nil {
		return nil, err
	}
	params, ok := a.object("params")
	if !ok {
		return nil, invalidArgument("params", "must be an object {path, query, headers, cookies, body}", a["params"])
	}
	p := args(params)
	for _, f := range []struct {
		name string
		dst  *map[string]any
	}{{"path", &in.Path}, {"query", &in.Query}, {"headers", &in.Headers}, {"cookies", &in.Cookies}} {
		if *f.dst, ok = p.object(f.name); !ok {
			return nil, invalidArgument("params."+f.name, "must be an object", p[f.name])
		}
	}
	for k := range p {
		if !slices.Contains([]string{"path", "query", "headers", "cookies", "body"}, k) {
			return nil, invalidArgument("params", "has an unknown field "+quote(k)+" (want path, query, headers, cookies, body)", k)
		}
	}
	in.Body = p["body"]
	idx, err := s.load(ctx, loc)
	if err != nil {
		return nil, err
	}
	return idx.CallPlan(in)
}

// Seed 003's validation messages beyond its error table.
func paging(a args, withOffset bool) (limit, offset int, err error) {
	limit, ok := a.int("limit", DefaultLimit, 1)
	if !ok {
		return 0, 0, fmt.Errorf("limit must be a positive integer")
	}
	if withOffset {
		if offset, ok = a.int("offset", 0, 0); !ok {
			return 0, 0, fmt.Errorf("offset must be a non-negative integer")
		}
	}
	return limit, offset, nil
}

// method reads seed 003's method argument: "" when absent.
func method(a args) (string, error) {
	v, ok := a["method"]
	if !ok || v == nil {
		return "", nil
	}
	m, _ := v.(string)
	if _, valid := validMethod(m); !valid {
		return "", seedErrorf("Invalid HTTP method: %v", v)
	}
	return m, nil
}

// required reads a required string argument of a seed 003 tool.
func required(a args, name string) (string, error) {
	v, err := a.str(name)
	if err != nil || v == "" {
		return "", fmt.Errorf("%s is required", name)
	}
	return v, nil
}

func (s *server) apiInfo(ctx context.Context, a args) (any, error) {
	loc, err := s.location(a)
	if err != nil {
		return nil, err
	}
	idx, err := s.load(ctx, loc)
	if err != nil {
		return nil, err
	}
	return idx.Info(), nil
}

func (s *server) listEndpoints(ctx context.Context, a args) (any, error) {
	loc, err := s.location(a)
	if err != nil {
		return nil, err
	}
	m, err := method(a)
	if err != nil {
		return nil, err
	}
	tag, err := a.str("tag")
	if err != nil {
		return nil, err
	}
	limit, offset, err := paging(a, true)
	if err != nil {
		return nil, err
	}
	idx, err := s.load(ctx, loc)
	if err != nil {
		return nil, err
	}
	return idx.ListEndpoints(m, tag, limit, offset), nil
}

func (s *server) searchEndpoints(ctx context.Context, a args) (any, error) {
	loc, err := s.location(a)
	if err != nil {
		return nil, err
	}
	query, ok := a["query"].(string)
	if !ok {
		return nil, fmt.Errorf("query is required")
	}
	if msg := s.queryTooLong(query); msg != "" {
		return nil, fmt.Errorf("query %s", msg)
	}
	in := AllFields
	if v, ok := a["searchIn"]; ok && v != nil {
		name, _ := v.(string)
		if in, ok = SearchIn[name]; !ok {
			return nil, seedErrorf("Invalid searchIn value: %v", v)
		}
	}
	limit, _, err := paging(a, false)
	if err != nil {
		return nil, err
	}
	idx, err := s.load(ctx, loc)
	if err != nil {
		return nil, err
	}
	return idx.SearchEndpoints(query, in, limit), nil
}

func (s *server) endpointDetails(ctx context.Context, a args) (any, error) {
	loc, err := s.location(a)
	if err != nil {
		return nil, err
	}
	path, err := required(a, "path")
	if err != nil {
		return nil, err
	}
	if _, err := required(a, "method"); err != nil {
		return nil, err
	}
	m, err := method(a)
	if err != nil {
		return nil, err
	}
	idx, err := s.load(ctx, loc)
	if err != nil {
		return nil, err
	}
	return idx.EndpointDetails(path, m)
}

func (s *server) listSchemas(ctx context.Context, a args) (any, error) {
	loc, err := s.location(a)
	if err != nil {
		return nil, err
	}
	limit, offset, err := paging(a, true)
	if err != nil {
		return nil, err
	}
	idx, err := s.load(ctx, loc)
	if err != nil {
		return nil, err
	}
	return idx.ListSchemas(limit, offset), nil
}

func (s *server) schemaDetails(ctx context.Context, a args) (any, error) {
	loc, err := s.location(a)
	if err != nil {
		return nil, err
	}
	name, err := required(a, "name")
	if err != nil {
		return nil, err
	}
	idx, err := s.load(ctx, loc)
	if err != nil {
		return nil, err
	}
	return idx.SchemaDetails(name)
}
