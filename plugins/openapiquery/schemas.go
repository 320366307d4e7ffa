package openapiquery

import (
	"cmp"
	"errors"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/plugins/schema"
)

// ObjectSchema is a JSON Schema object of named values: one parameter
// location of get_request_schema.
type ObjectSchema struct {
	Type       string         `json:"type"` // always "object"
	Properties map[string]any `json:"properties"`
	Required   []string       `json:"required"`
}

// RequestBody is the body part of get_request_schema.
type RequestBody struct {
	// SelectedContentType is nil when the operation takes no body.
	SelectedContentType *string        `json:"selectedContentType"`
	Required            bool           `json:"required"`
	Schema              map[string]any `json:"schema"`
}

// RequestSchema is the output of get_request_schema (seed 000 §4.3.2).
type RequestSchema struct {
	OperationID string `json:"operationId"`
	Method      string `json:"method"`
	Path        string `json:"path"`
	Params      struct {
		Path   ObjectSchema `json:"path"`
		Query  ObjectSchema `json:"query"`
		Header ObjectSchema `json:"header"`
		Cookie ObjectSchema `json:"cookie"`
	} `json:"params"`
	Body RequestBody `json:"body"`
	// Components holds, in the shape of the document's components object
	// ({"schemas": {"Node": ...}}), the targets of the $refs left in place
	// (cycles, depth limit); it is empty when everything was inlined.
	Components map[string]any `json:"components"`
}

// Response is one status code of get_response_schema.
type Response struct {
	// SelectedContentType is nil when the response has no content; Schema
	// is then empty.
	SelectedContentType *string        `json:"selectedContentType"`
	Schema              map[string]any `json:"schema"`
	// OtherContentTypes maps each other media type the response offers
	// (a CSV beside the JSON) to its schema; absent when there is none.
	OtherContentTypes map[string]any `json:"otherContentTypes,omitempty"`
}

// ResponseSchema is the output of get_response_schema (seed 000 §4.4.2).
type ResponseSchema struct {
	OperationID string              `json:"operationId"`
	Method      string              `json:"method"`
	Path        string              `json:"path"`
	Responses   map[string]Response `json:"responses"`
	Components  map[string]any      `json:"components"`
}

// id is how the tools name an operation: its operationId, else
// "METHOD /path".
func (o *Operation) id() string { return cmp.Or(o.OperationID, o.key()) }

// request is an operation's request before resolution: a schema for each
// parameter location and the body, and what is required.
type request struct {
	o        *Operation
	props    map[string]any      // "path"... "cookie": {"type": "object", "properties"}; "body": its schema
	required map[string][]string // by location
	bodyType *string             // the selected content type; nil without a body
	bodyReq  bool
	cookies  bool // the operation has cookie parameters
}

func (x *Index) request(id string) (*request, error) {
	o, err := x.operation(id)
	if err != nil {
		return nil, err
	}
	params, err := x.parameters(o)
	if err != nil {
		return nil, err
	}
	r := &request{o: o, props: map[string]any{}, required: map[string][]string{}}
	groups := map[string]map[string]any{}
	for _, in := range paramLocations {
		groups[in] = map[string]any{}
		r.required[in] = []string{}
		r.props[in] = map[string]any{"type": "object", "properties": groups[in]}
	}
	for _, p := range params {
		name, in := p["name"].(string), p["in"].(string)
		groups[in][name] = paramSchema(p)
		r.cookies = r.cookies || in == "cookie"
		if in == "path" || p["required"] == true {
			r.required[in] = append(r.required[in], name)
		}
	}
	if rb, ok := o.op["requestBody"]; ok {
		body, ct, err := x.requestBody(o, rb)
		if err != nil {
			return nil, err
		}
		r.bodyType, r.bodyReq = &ct, body["required"] == true
		r.props["body"] = mediaSchema(body["content"], ct)
	}
	return r, nil
}

// RequestSchema answers get_request_schema for the operation id (an
// operationId, or "METHOD /path" for an operation without one).
func (x *Index) RequestSchema(id string) (*RequestSchema, error) {
	r, err := x.request(id)
	if err != nil {
		return nil, err
	}
	resolved, comps, err := x.resolveKeepingRefs(r.props)
	if err != nil {
		return nil, err
	}
	out := &RequestSchema{OperationID: r.o.id(), Method: r.o.Method, Path: r.o.Path, Components: comps}
	params := []*ObjectSchema{&out.Params.Path, &out.Params.Query, &out.Params.Header, &out.Params.Cookie}
	for i, in := range paramLocations {
		g, _ := resolved[in].(map[string]any)
		p, _ := g["properties"].(map[string]any)
		*params[i] = ObjectSchema{Type: "object", Properties: p, Required: r.required[in]}
	}
	out.Body.SelectedContentType, out.Body.Required = r.bodyType, r.bodyReq
	out.Body.Schema, _ = resolved["body"].(map[string]any)
	if out.Body.Schema == nil {
		out.Body.Schema = map[string]any{}
	}
	return out, nil
}

// paramLocations are the "in" values of parameters, in output order.
var paramLocations = []string{"path", "query", "header", "cookie"}

// parameters merges the path item's parameters with the operation's (the
// operation's win, by name and location), references followed. Found by
// a map, not a search of those merged so far: a document's 32,000
// parameters took 47 s a request.
func (x *Index) parameters(o *Operation) ([]map[string]any, error) {
	type key struct{ name, in string }
	var out []map[string]any
	at := map[key]int{}
	for _, list := range []any{o.item["parameters"], o.op["parameters"]} {
		items, _ := list.([]any)
		for i, v := range items {
			v, err := x.lookup.Deref(v)
			if err != nil {
				return nil, refError(err, o)
			}
			p, ok := v.(map[string]any)
			name, _ := p["name"].(string)
			in, _ := p["in"].(string)
			if !ok || name == "" || !slices.Contains(paramLocations, in) {
				return nil, &Error{Code: CodeInvalidOperation,
					Message: o.key() + ": parameter " + strconv.Itoa(i) + " is not a parameter object with a name and an \"in\" of path, query, header or cookie",
					Details: map[string]any{"operation": o.key(), "parameter": v}}
			}
			if j, ok := at[key{name, in}]; ok {
				out[j] = p
				continue
			}
			at[key{name, in}] = len(out)
			out = append(out, p)
		}
	}
	return out, nil
}

// paramSchema is a parameter's schema (or its content's) carrying the
// parameter's description and deprecation, so nothing it says is lost.
func paramSchema(p map[string]any) any {
	s, ok := p["schema"]
	if !ok {
		if content, ok := p["content"].(map[string]any); ok {
			s = mediaSchema(content, openapi.PickMediaType(content))
		} else {
			s = map[string]any{}
		}
	}
	m, ok := s.(map[string]any)
	if !ok {
		return s // the resolver degrades it, with a note
	}
	var extra map[string]any
	for _, k := range []string{"description", "deprecated"} {
		if v, ok := p[k]; ok && m[k] == nil {
			if extra == nil {
				extra = maps.Clone(m)
			}
			extra[k] = v
		}
	}
	if extra != nil {
		return extra
	}
	return m
}

// requestBody follows the operation's requestBody reference and chooses
// its content type. A body with no content cannot be described.
func (x *Index) requestBody(o *Operation, v any) (map[string]any, string, error) {
	v, err := x.lookup.Deref(v)
	if err != nil {
		return nil, "", refError(err, o)
	}
	body, _ := v.(map[string]any)
	content, _ := body["content"].(map[string]any)
	if len(content) == 0 {
		return nil, "", &Error{Code: CodeSchemaMissing, Message: o.key() + ": the request body has no content, so its schema is unknown",
			Details: map[string]any{"operation": o.key()}}
	}
	return body, openapi.PickMediaType(content), nil
}

// mediaSchema is the schema of content's media type ct; a media type
// without a schema accepts any value of that type.
func mediaSchema(content any, ct string) any {
	c, _ := content.(map[string]any)
	mt, _ := c[ct].(map[string]any)
	if s, ok := mt["schema"]; ok {
		return s
	}
	return map[string]any{}
}

// ResponseSchema answers get_response_schema for the operation id.
func (x *Index) ResponseSchema(id string) (*ResponseSchema, error) {
	o, err := x.operation(id)
	if err != nil {
		return nil, err
	}
	out := &ResponseSchema{OperationID: o.id(), Method: o.Method, Path: o.Path, Responses: map[string]Response{}}
	responses, _ := o.op["responses"].(map[string]any)
	props := map[string]any{}
	for code, v := range responses {
		if strings.HasPrefix(code, "x-") {
			continue
		}
		v, err := x.lookup.Deref(v)
		if err != nil {
			return nil, refError(err, o)
		}
		r, ok := v.(map[string]any)
		if !ok {
			return nil, &Error{Code: CodeInvalidOperation, Message: o.key() + ": response " + code + " is not a response object",
				Details: map[string]any{"operation": o.key(), "status": code}}
		}
		content, _ := r["content"].(map[string]any)
		if len(content) == 0 {
			out.Responses[code] = Response{Schema: map[string]any{}}
			continue
		}
		ct := openapi.PickMediaType(content)
		out.Responses[code] = Response{SelectedContentType: &ct}
		props[code] = mediaSchema(content, ct)
		for other := range content {
			if other != ct {
				// Status codes hold no space: the key splits back.
				props[code+" "+other] = mediaSchema(content, other)
			}
		}
	}
	resolved, comps, err := x.resolveKeepingRefs(props)
	if err != nil {
		return nil, err
	}
	for key, s := range resolved {
		code, other, isOther := strings.Cut(key, " ")
		r := out.Responses[code]
		if isOther {
			if r.OtherContentTypes == nil {
				r.OtherContentTypes = map[string]any{}
			}
			r.OtherContentTypes[other] = s
		} else {
			r.Schema, _ = s.(map[string]any)
		}
		out.Responses[code] = r
	}
	out.Components = comps
	return out, nil
}

// keepRefDepths are the reference depths resolveKeepingRefs tries in turn:
// the deepest expansion that fits the resolver's node budget wins, so that
// a densely linked document (Stripe's: every object reaches every other)
// comes back as $refs and components rather than truncated. At depth 1
// every component is its own schema with the references in it kept,
// bounded by the document's size, so the last try lifts the node budget.
var keepRefDepths = []int{schema.DefaultMaxDepth, 4, 1}

// resolveKeepingRefs expands the schemas of props (a name for each) in one
// pass of the shared resolver, so that they share its expansions and one
// components object: inlined as far as the node budget allows, $refs kept
// on cycles and past that depth.
func (x *Index) resolveKeepingRefs(props map[string]any) (map[string]any, map[string]any, error) {
	var res schema.Result
	for i, depth := range keepRefDepths {
		opts := schema.Options{KeepRefs: true, Raw: true, MaxDepth: depth}
		if i == len(keepRefDepths)-1 {
			opts.MaxNodes = 1 << 22
		}
		var err error
		if res, err = x.resolve(props, opts); err != nil {
			return nil, nil, err
		}
		if !res.Truncated {
			break
		}
	}
	comps, err := nestComponents(res.Components)
	if err != nil {
		return nil, nil, err
	}
	out, _ := res.Schema["properties"].(map[string]any)
	return out, comps, nil
}

// resolve resolves the object schema with properties props. An
// unresolvable $ref, which the resolver would degrade to "any value", is
// an error: the tools never drop a field silently.
func (x *Index) resolve(props map[string]any, opts schema.Options) (schema.Result, error) {
	var missing []string
	lookup := func(ref string) (any, bool) {
		v, ok := x.lookup(ref)
		if !ok && !slices.Contains(missing, ref) {
			missing = append(missing, ref)
		}
		return v, ok
	}
	root := map[string]any{"type": "object", "properties": props}
	res, err := schema.Resolve(root, lookup, opts)
	if err != nil {
		return res, err // not for this root: an object and no reference
	}
	if len(missing) > 0 {
		where := []string{}
		for _, w := range res.Warnings {
			if strings.Contains(w, "unresolvable reference") {
				where = append(where, w)
			}
		}
		return res, &Error{Code: CodeUnresolvableRef, Message: "unresolvable $ref " + quote(missing[0]),
			Details: map[string]any{"refs": missing, "at": where}}
	}
	return res, nil
}

// nestComponents turns the resolver's components, keyed by reference
// ("#/components/schemas/Node"), into the shape of the document's
// components object ({"schemas": {"Node": ...}}), where each reference
// still resolves as a JSON pointer from the document root.
func nestComponents(kept map[string]any) (map[string]any, error) {
	out := map[string]any{}
	type entry struct {
		ref    string
		tokens []string
	}
	var entries []entry
	for ref := range kept {
		rest, ok := strings.CutPrefix(ref, "#/components/")
		if !ok {
			return nil, &Error{Code: CodeUnresolvableRef,
				Message: "the cyclic $ref " + quote(ref) + " points outside #/components and cannot be returned in components",
				Details: map[string]any{"ref": ref}}
		}
		if s, err := url.PathUnescape(rest); err == nil {
			rest = s
		}
		tokens := strings.Split(rest, "/")
		for i, t := range tokens {
			tokens[i] = pointerUnescaper.Replace(t)
		}
		entries = append(entries, entry{ref, tokens})
	}
	// Ancestors first: a reference inside a placed component is already
	// there (as expanded, or as a $ref listed on its own).
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(len(a.tokens), len(b.tokens)), cmp.Compare(a.ref, b.ref))
	})
	placed := map[string]bool{}
	for _, e := range entries {
		cur, inside := out, false
		for i, t := range e.tokens[:len(e.tokens)-1] {
			if placed[strings.Join(e.tokens[:i+1], "/")] {
				inside = true
				break
			}
			next, _ := cur[t].(map[string]any)
			if next == nil {
				next = map[string]any{}
				cur[t] = next
			}
			cur = next
		}
		if !inside {
			cur[e.tokens[len(e.tokens)-1]] = kept[e.ref]
			placed[strings.Join(e.tokens, "/")] = true
		}
	}
	return out, nil
}

var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// refError turns a reference the lookup could not follow into an error
// object.
func refError(err error, o *Operation) error {
	var re *schema.RefError
	if errors.As(err, &re) {
		msg := "unresolvable $ref " + quote(re.Ref)
		if re.Cyclic {
			msg = "$ref " + quote(re.Ref) + " is part of a reference cycle"
		}
		return &Error{Code: CodeUnresolvableRef, Message: o.key() + ": " + msg,
			Details: map[string]any{"operation": o.key(), "ref": re.Ref}}
	}
	return err
}
