package openapiquery

import (
	"encoding/json"
	"maps"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/schema"
)

// PlanInput is what the agent chose: an operation and the values of its
// parameters and body, by location.
type PlanInput struct {
	OperationID string         `json:"operationId"`
	Path        map[string]any `json:"path,omitempty"`
	Query       map[string]any `json:"query,omitempty"`
	Headers     map[string]any `json:"headers,omitempty"`
	Cookies     map[string]any `json:"cookies,omitempty"`
	Body        any            `json:"body,omitempty"` // nil: no body
}

// PlanParams are the values of a call plan (seed 000 §5).
type PlanParams struct {
	Path    map[string]any `json:"path"`
	Query   map[string]any `json:"query"`
	Headers map[string]any `json:"headers"`
	// Cookies is present only for operations with cookie parameters, which
	// the seed's plan does not foresee.
	Cookies map[string]any `json:"cookies,omitempty"`
	Body    any            `json:"body"`
}

// ExpectedResponse is one status code of a call plan.
type ExpectedResponse struct {
	ContentType *string        `json:"contentType"`
	Schema      map[string]any `json:"schema"`
}

// CallPlan is the output of seed 000 §5, for the business layer's executor.
type CallPlan struct {
	OperationID string `json:"operationId"`
	Method      string `json:"method"`
	Path        string `json:"path"`
	// ContentType is the body's content type, which the executor
	// serializes params.body as; absent for operations without a body.
	ContentType       *string                     `json:"contentType,omitempty"`
	Params            PlanParams                  `json:"params"`
	ExpectedResponses map[string]ExpectedResponse `json:"expectedResponses"`
	// Components resolves the $refs left in expectedResponses.
	Components map[string]any `json:"components,omitempty"`
}

// CallPlan validates the agent's values against the operation's request
// schema and returns the call plan: params from the values (headers from
// the header parameters), expectedResponses from get_response_schema. Values
// that fail the schema, or name a parameter the operation does not have,
// give an invalid_params error listing each field.
func (x *Index) CallPlan(in PlanInput) (*CallPlan, error) {
	r, err := x.request(in.OperationID)
	if err != nil {
		return nil, err
	}
	values := map[string]any{
		"path":    orEmpty(in.Path),
		"query":   orEmpty(in.Query),
		"headers": orEmpty(in.Headers),
		"cookies": orEmpty(in.Cookies),
	}
	if in.Body != nil {
		values["body"] = in.Body
	}
	if errs, err := x.validate(r, values); err != nil {
		return nil, err
	} else if len(errs) > 0 {
		return nil, &Error{Code: CodeInvalidParams, Message: "the values do not match the request schema of " + r.o.id(),
			Details: map[string]any{"operationId": r.o.id(), "errors": errs}}
	}

	resp, err := x.ResponseSchema(in.OperationID)
	if err != nil {
		return nil, err
	}
	plan := &CallPlan{
		OperationID: r.o.id(), Method: r.o.Method, Path: r.o.Path, ContentType: r.bodyType,
		Params: PlanParams{
			Path: values["path"].(map[string]any), Query: values["query"].(map[string]any),
			Headers: values["headers"].(map[string]any), Body: in.Body,
		},
		ExpectedResponses: make(map[string]ExpectedResponse, len(resp.Responses)),
	}
	if r.cookies || len(in.Cookies) > 0 {
		plan.Params.Cookies = values["cookies"].(map[string]any)
	}
	for code, rs := range resp.Responses {
		plan.ExpectedResponses[code] = ExpectedResponse{ContentType: rs.SelectedContentType, Schema: rs.Schema}
	}
	if len(resp.Components) > 0 {
		plan.Components = resp.Components
	}
	return plan, nil
}

// validate checks values against the request schema, resolved for
// validation: inlined, cycles pruned, normalized to what the shared
// argument validator reads (OpenAPI 3.0 nullable included). Parameter
// locations are closed: an unknown name is an error, not a silent extra.
func (x *Index) validate(r *request, values map[string]any) ([]plugins.FieldError, error) {
	props := make(map[string]any, len(r.props))
	for in, s := range r.props {
		name := in
		switch in {
		case "header":
			name = "headers"
		case "cookie":
			name = "cookies"
		}
		if in != "body" {
			g := maps.Clone(s.(map[string]any))
			g["required"], g["additionalProperties"] = toAny(r.required[in]), false
			s = g
		}
		props[name] = s
	}
	res, err := x.resolve(props, schema.Options{Direction: schema.Request})
	if err != nil {
		return nil, err
	}
	if r.bodyReq {
		res.Schema["required"] = []any{"body"}
	}
	params, err := json.Marshal(res.Schema)
	if err != nil {
		return nil, err
	}
	return (&plugins.Plugin{Parameters: params}).ValidateArguments(values), nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
