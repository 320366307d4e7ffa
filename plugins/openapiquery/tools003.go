package openapiquery

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The answers of seed 003's six tools. Their errors carry the seed's exact
// texts; the seed 000 tools' error objects are not used here.

// APIInfo is the output of get_api_info.
type APIInfo struct {
	Title          string `json:"title"`
	Version        string `json:"version"`
	Description    string `json:"description,omitempty"`
	OpenAPIVersion string `json:"openapiVersion"`
}

// Info answers get_api_info.
func (x *Index) Info() APIInfo {
	info, _ := x.Doc.Raw["info"].(map[string]any)
	a := APIInfo{Title: x.Doc.Title, OpenAPIVersion: x.Doc.Version}
	a.Version, _ = info["version"].(string)
	a.Description, _ = info["description"].(string)
	return a
}

// Endpoint is one result of list_endpoints.
type Endpoint struct {
	Path    string   `json:"path"`
	Method  string   `json:"method"`
	Summary string   `json:"summary,omitempty"`
	Tags    []string `json:"tags"`
}

// EndpointList is the output of list_endpoints.
type EndpointList struct {
	Results []Endpoint `json:"results"`
	Total   int        `json:"total"` // before limit and offset
}

// ListEndpoints answers list_endpoints. method ("" for any) is an HTTP
// method in any case; tag "" matches every operation.
func (x *Index) ListEndpoints(method, tag string, limit, offset int) EndpointList {
	method = strings.ToUpper(method)
	out := EndpointList{Results: []Endpoint{}}
	for _, o := range x.ops {
		if method != "" && o.Method != method || tag != "" && !slices.Contains(o.Tags, tag) {
			continue
		}
		if out.Total >= offset && len(out.Results) < limit {
			out.Results = append(out.Results, Endpoint{o.Path, o.Method, o.Summary, nonNil(o.Tags)})
		}
		out.Total++
	}
	return out
}

// SearchResult is one result of search_endpoints.
type SearchResult struct {
	Path      string  `json:"path"`
	Method    string  `json:"method"`
	Summary   string  `json:"summary,omitempty"`
	Relevance float64 `json:"relevance"`
}

// SearchResults is the output of search_endpoints.
type SearchResults struct {
	Results []SearchResult `json:"results"`
	Total   int            `json:"total"` // before limit
}

// SearchIn maps search_endpoints' searchIn values to the fields searched;
// "all" adds the operationId to the seed's four.
var SearchIn = map[string]Match{
	"all":         AllFields,
	"path":        {Path: true},
	"summary":     {Summary: true},
	"description": {Description: true},
	"tags":        {Tag: true},
}

// SearchEndpoints answers search_endpoints; in must be a key of [SearchIn].
func (x *Index) SearchEndpoints(query string, in Match, limit int) SearchResults {
	hits, _ := x.Find(Query{Text: query, Match: in}) // no method: cannot fail
	out := SearchResults{Results: []SearchResult{}, Total: len(hits)}
	for _, h := range hits[:min(limit, len(hits))] {
		out.Results = append(out.Results, SearchResult{h.Path, h.Method, h.Summary, h.Relevance})
	}
	return out
}

// EndpointDetails is the output of get_endpoint_details: the operation's
// parameters (the path item's included), request body and responses with
// their references followed; schemas are left as written (see
// get_schema_details).
type EndpointDetails struct {
	Path        string           `json:"path"`
	Method      string           `json:"method"`
	OperationID string           `json:"operationId,omitempty"`
	Summary     string           `json:"summary,omitempty"`
	Description string           `json:"description,omitempty"`
	Parameters  []map[string]any `json:"parameters,omitempty"`
	RequestBody any              `json:"requestBody,omitempty"`
	Responses   map[string]any   `json:"responses"`
	// Security is the operation's, or else the document's.
	Security any `json:"security,omitempty"`
}

// EndpointDetails answers get_endpoint_details.
func (x *Index) EndpointDetails(path, method string) (*EndpointDetails, error) {
	o := x.byKey[strings.ToUpper(method)+" "+path]
	if o == nil {
		return nil, seedErrorf("No endpoint found at %s %s", path, method)
	}
	d := &EndpointDetails{Path: o.Path, Method: o.Method, OperationID: o.OperationID,
		Summary: o.Summary, Description: o.Description, Responses: map[string]any{}}
	params, err := x.parameters(o)
	if err != nil {
		return nil, errors.New(asError(err).Message)
	}
	d.Parameters = params
	if rb, ok := o.op["requestBody"]; ok {
		if d.RequestBody, err = x.lookup.Deref(rb); err != nil {
			return nil, errors.New(asError(refError(err, o)).Message)
		}
	}
	responses, _ := o.op["responses"].(map[string]any)
	for code, r := range responses {
		if d.Responses[code], err = x.lookup.Deref(r); err != nil {
			return nil, errors.New(asError(refError(err, o)).Message)
		}
	}
	if s, ok := o.op["security"]; ok {
		d.Security = s
	} else {
		d.Security = x.Doc.Raw["security"]
	}
	return d, nil
}

// SchemaList is the output of list_schemas.
type SchemaList struct {
	Results []string `json:"results"`
	Total   int      `json:"total"`
}

// ListSchemas answers list_schemas.
func (x *Index) ListSchemas(limit, offset int) SchemaList {
	lo := min(offset, len(x.schemas))
	hi := min(lo+limit, len(x.schemas))
	return SchemaList{Results: slices.Clone(x.schemas[lo:hi]), Total: len(x.schemas)}
}

// SchemaDetails is the output of get_schema_details.
type SchemaDetails struct {
	Name        string         `json:"name"`
	Type        string         `json:"type"`
	Properties  map[string]any `json:"properties,omitempty"`
	Required    []any          `json:"required,omitempty"`
	Description string         `json:"description,omitempty"`
	// Dependencies are the other schemas it references, by name.
	Dependencies []string `json:"dependencies,omitempty"`
}

// SchemaDetails answers get_schema_details. Properties are as written;
// Dependencies name the schemas they (and the rest of the schema)
// reference, to look up next.
func (x *Index) SchemaDetails(name string) (*SchemaDetails, error) {
	comps, _ := x.Doc.Raw["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	v, ok := schemas[name]
	if !ok {
		return nil, seedErrorf("No schema found with name: %s", name)
	}
	s, _ := v.(map[string]any)
	d := &SchemaDetails{Name: name, Type: typeName(s)}
	d.Properties, _ = s["properties"].(map[string]any)
	d.Required, _ = s["required"].([]any)
	d.Description, _ = s["description"].(string)
	deps := map[string]bool{}
	collectRefs(s, deps)
	delete(deps, name)
	d.Dependencies = slices.Sorted(maps.Keys(deps))
	return d, nil
}

// typeName is a schema's type as one string: "string | null" for a 3.1
// type list; when there is no type, what the schema is made of.
func typeName(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		parts := make([]string, 0, len(t))
		for _, p := range t {
			parts = append(parts, fmt.Sprint(p))
		}
		return strings.Join(parts, " | ")
	}
	for _, k := range []string{"properties", "items", "allOf", "oneOf", "anyOf", "$ref", "enum"} {
		if _, ok := s[k]; ok {
			switch k {
			case "properties":
				return "object"
			case "items":
				return "array"
			}
			return k
		}
	}
	return "any"
}

// collectRefs adds the name of every "#/components/schemas/" reference in
// v to names.
func collectRefs(v any, names map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok {
			if n, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok {
				n, _, _ = strings.Cut(n, "/") // a pointer into the schema
				names[pointerUnescaper.Replace(n)] = true
			}
		}
		for _, c := range t {
			collectRefs(c, names)
		}
	case []any:
		for _, c := range t {
			collectRefs(c, names)
		}
	}
}

// nonNil makes a nil list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
