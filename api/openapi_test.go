package api

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rebuild openapi.json from openapi.yaml")

// TestOpenAPIBuilt rebuilds the description from its source and fails
// when the committed openapi.json differs (-update rewrites it).
func TestOpenAPIBuilt(t *testing.T) {
	built, err := buildOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("openapi.json", built, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(built, openAPIDocument) {
		t.Errorf("openapi.json is not built from openapi.yaml: run go generate ./api")
	}
}

// Security requirements by x-role: who may call. A console session acts
// as the token it signed in with, so it stands beside each.
// The least token first: a client (the engine's own import among them)
// that takes the first scheme it supports asks for no more than needed.
var roleSecurity = map[string][]string{
	"admin":   {"adminToken", "consoleSession"},
	"service": {"serviceToken", "adminToken", "consoleSession"},
	"user":    {"userToken", "serviceToken", "adminToken", "consoleSession"},
}

// commonAnswer is an answer every route of a kind can give, whatever it
// does: guarded routes (x-role not none) and routes reading a body.
type commonAnswer struct {
	status, description string
	codes               []string
}

var (
	guardedAnswers = []commonAnswer{
		{"401", "No token, or not a valid one.", []string{"unauthorized"}},
		{"403", "The token may not call this route.", []string{"forbidden"}},
		{"500", "The engine failed (its log says why).", []string{"internal"}},
	}
	// failClosedAnswer: the routes that read what the database holds,
	// past BLINDEXEC_DB_OUTAGE_GRACE_MS.
	failClosedAnswer = commonAnswer{"503", "The database has been unreachable for longer than the outage grace.", []string{"database_unavailable"}}
	// writeFailClosedAnswer: the routes of failClosedAnswer that write (any
	// method but GET), whose write's COMMIT may be cut (leftovers78).
	writeFailClosedAnswer = commonAnswer{"503", "The database has been unreachable for longer than the outage grace (database_unavailable); or it stopped answering as this request's write was committed (commit_outcome_unknown): the write may have been done, read it back before sending the request again.",
		[]string{"database_unavailable", "commit_outcome_unknown"}}
	bodyAnswers = []commonAnswer{
		{"400", "The body is not valid JSON, or a field has the wrong type, or it nests too deep.", []string{"malformed_request", "body_too_complex"}},
		{"408", "The body did not arrive in time.", []string{"body_timeout"}},
		{"413", "The body is over the limit.", []string{"body_too_large"}},
	}
)

// buildOpenAPI builds openapi.json: openapi.yaml with the plugin
// protocol's schema (plugins/protocol.schema.json) as its components, the
// x-extends schemas expanded, and each operation's security and common
// answers added from its x-role and body.
func buildOpenAPI() ([]byte, error) {
	src, err := os.ReadFile("openapi.yaml")
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	components := doc["components"].(map[string]any)
	schemas := components["schemas"].(map[string]any)
	if err := hoistProtocol(schemas); err != nil {
		return nil, err
	}
	for name, s := range schemas {
		if err := extend(schemas, name, s.(map[string]any)); err != nil {
			return nil, err
		}
	}
	queryEmptyIsAbsent(slices.Collect(maps.Values(components["parameters"].(map[string]any))))
	for path, item := range doc["paths"].(map[string]any) {
		queryEmptyIsAbsent(item.(map[string]any)["parameters"])
		for method, op := range item.(map[string]any) {
			op, ok := op.(map[string]any)
			if !ok || !slices.Contains([]string{"get", "put", "post", "patch", "delete"}, method) {
				continue
			}
			if err := completeOperation(method, op, components["responses"].(map[string]any)); err != nil {
				return nil, fmt.Errorf("%s %s: %w", method, path, err)
			}
			queryEmptyIsAbsent(op["parameters"])
		}
	}
	if err := addExamples(doc); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// hoistProtocol makes the plugin protocol's schema the component Plugin
// and its $defs components named Plugin plus their name in camel case,
// so that the protocol is stated once, in plugins/protocol.schema.json.
func hoistProtocol(schemas map[string]any) error {
	raw, err := os.ReadFile("../plugins/protocol.schema.json")
	if err != nil {
		return err
	}
	var proto map[string]any
	if err := json.Unmarshal(raw, &proto); err != nil {
		return err
	}
	rename := func(def string) string {
		var b strings.Builder
		b.WriteString("Plugin")
		for part := range strings.SplitSeq(def, "_") {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
		return b.String()
	}
	defs, _ := proto["$defs"].(map[string]any)
	for _, k := range []string{"$schema", "$id", "$defs"} {
		delete(proto, k)
	}
	rewriteRefs(proto, rename)
	typeStringEnums(proto)
	schemas["Plugin"] = proto
	for name, d := range defs {
		rewriteRefs(d, rename)
		typeStringEnums(d)
		schemas[rename(name)] = d
	}
	return nil
}

// typeStringEnums gives an enum or const of strings without a type the
// type string, which it implies: generators make it a string rather than
// an untyped value.
func typeStringEnums(v any) {
	switch t := v.(type) {
	case map[string]any:
		values := asList(t["enum"])
		if c, ok := t["const"]; ok {
			values = []any{c}
		}
		if _, typed := t["type"]; !typed && len(values) > 0 && !slices.ContainsFunc(values, func(x any) bool { _, ok := x.(string); return !ok }) {
			t["type"] = "string"
		}
		for _, c := range t {
			typeStringEnums(c)
		}
	case []any:
		for _, c := range t {
			typeStringEnums(c)
		}
	}
}

func rewriteRefs(v any, rename func(string) string) {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok {
			if def, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
				t["$ref"] = "#/components/schemas/" + rename(def)
			}
		}
		for _, c := range t {
			rewriteRefs(c, rename)
		}
	case []any:
		for _, c := range t {
			rewriteRefs(c, rename)
		}
	}
}

// extend expands x-extends: the named schema's keywords, with the
// extending schema's properties and required added and its other
// keywords in place of the named one's. An answer's extra fields then
// stay refused (additionalProperties), as allOf could not keep them.
func extend(schemas map[string]any, name string, s map[string]any) error {
	base, ok := s["x-extends"].(string)
	if !ok {
		return nil
	}
	b, ok := schemas[base].(map[string]any)
	if !ok {
		return fmt.Errorf("%s: x-extends names no schema %q", name, base)
	}
	if err := extend(schemas, base, b); err != nil {
		return err
	}
	merged := deepCopy(b).(map[string]any)
	for k, v := range s {
		switch k {
		case "x-extends":
		case "properties":
			props, _ := merged["properties"].(map[string]any)
			if props == nil {
				props = map[string]any{}
			}
			maps.Copy(props, v.(map[string]any))
			merged["properties"] = props
		case "required":
			req, _ := merged["required"].([]any)
			merged["required"] = append(slices.Clone(req), v.([]any)...)
		default:
			merged[k] = v
		}
	}
	schemas[name] = merged
	return nil
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = deepCopy(c)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = deepCopy(c)
		}
		return out
	}
	return v
}

// completeOperation adds the security and common answers of op (of
// method); an answer given by reference (named, in shared) is copied in to
// take them.
func completeOperation(method string, op, shared map[string]any) error {
	role, _ := op["x-role"].(string)
	responses := op["responses"].(map[string]any)
	var add []commonAnswer
	switch role {
	case "none":
		op["security"] = []any{}
	case "admin", "service", "user":
		var sec []any
		for _, scheme := range roleSecurity[role] {
			sec = append(sec, map[string]any{scheme: []any{}})
		}
		op["security"] = sec
		add = append(add, guardedAnswers...)
		if op["x-serves-past-outage"] != true {
			if method == "get" {
				add = append(add, failClosedAnswer)
			} else {
				add = append(add, writeFailClosedAnswer)
			}
		}
	default:
		return fmt.Errorf("x-role: %q is none of none, user, service, admin", role)
	}
	if body, ok := op["requestBody"].(map[string]any); ok && body["content"].(map[string]any)["application/json"] != nil {
		add = append(add, bodyAnswers...) // a JSON body is read and scanned (readJSON)
	}
	for _, a := range add {
		r, ok := responses[a.status].(map[string]any)
		if !ok {
			responses[a.status] = map[string]any{
				"description":   a.description,
				"x-error-codes": toAny(a.codes),
				"content":       map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
			}
			continue
		}
		if ref, isRef := r["$ref"].(string); isRef {
			named, ok := shared[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
			if !ok {
				return fmt.Errorf("%s: no answer %s", a.status, ref)
			}
			r = deepCopy(named).(map[string]any)
			responses[a.status] = r
		}
		codes, _ := r["x-error-codes"].([]any)
		for _, c := range a.codes {
			if !slices.Contains(codes, any(c)) {
				codes = append(codes, c)
			}
		}
		r["x-error-codes"] = codes
	}
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// queryEmptyIsAbsent marks the query parameters of params
// allowEmptyValue: the engine reads an empty value as no value.
func queryEmptyIsAbsent(params any) {
	list, _ := params.([]any)
	for _, p := range list {
		if p, ok := p.(map[string]any); ok && p["in"] == "query" {
			p["allowEmptyValue"] = true
		}
	}
}

// addExamples puts the examples the tests recorded
// (testdata/examples.json) into the built description: each answer's,
// under its operation and status or its name among the components, and
// each request body's.
func addExamples(doc map[string]any) error {
	examples, err := committedExamples()
	if err != nil {
		return err
	}
	put := func(key string, where any) {
		ex, ok := examples[key]
		media, _ := where.(map[string]any)
		content, _ := media["content"].(map[string]any)
		mt, _ := content["application/json"].(map[string]any)
		if ok && mt != nil {
			mt["example"] = ex
		}
	}
	for name, r := range doc["components"].(map[string]any)["responses"].(map[string]any) {
		put("#/components/responses/"+name, r)
	}
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			op, ok := op.(map[string]any)
			if !ok {
				continue
			}
			name := strings.ToUpper(method) + " " + path
			put(name+" request", op["requestBody"])
			for status, r := range op["responses"].(map[string]any) {
				put(name+" "+status, r)
			}
		}
	}
	return nil
}
