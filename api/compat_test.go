package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// previousOpenAPI is the description of the last release: a release
// copies openapi.json here, after the upgrade notes name its breaks.
const previousOpenAPI = "testdata/openapi.previous.json"

// upgradeNotes is where a break of compatibility must be named.
const upgradeNotes = "../docs/upgrading.md"

// TestOpenAPICompatible compares the description with the last release's
// and fails on a change that breaks a client built against it — a route
// removed, an answer's field removed, made optional or given another
// type, a request's new required field or parameter, a request field
// narrowed — unless the upgrade notes name it: its route (`GET /v1/...`)
// and, for a field, the field's name.
func TestOpenAPICompatible(t *testing.T) {
	prev, err := os.ReadFile(previousOpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(upgradeNotes)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range breakingChanges(t, prev, openAPIDocument) {
		if !c.namedIn(string(notes)) {
			t.Errorf("%s: %s — a break of compatibility with %s: name it in %s (its route and field), or keep the old form", c.op, c.what, previousOpenAPI, upgradeNotes)
		}
	}
}

// TestBreakingChangesFound: each kind of break is found, and named breaks
// pass.
func TestBreakingChangesFound(t *testing.T) {
	edit := func(f func(doc map[string]any)) []byte {
		var doc map[string]any
		if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
			t.Fatal(err)
		}
		f(doc)
		b, _ := json.Marshal(doc)
		return b
	}
	at := func(v any, path ...string) map[string]any {
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		return v.(map[string]any)
	}
	schemas := func(doc map[string]any) map[string]any { return at(doc, "components", "schemas") }
	for _, tc := range []struct {
		name string
		edit func(doc map[string]any)
		want string
	}{
		{"a route removed", func(doc map[string]any) { delete(at(doc, "paths"), "/v1/executions") }, "GET /v1/executions: route removed"},
		{"an answer's field removed", func(doc map[string]any) { delete(at(schemas(doc), "SearchResponse", "properties"), "took_ms") },
			"GET /v1/tools/search: answer 200 field took_ms removed"},
		{"an answer's field made optional", func(doc map[string]any) { at(schemas(doc), "SearchResponse")["required"] = []any{"results"} },
			"GET /v1/tools/search: answer 200 field offset no longer always given"},
		{"an answer's field given another type", func(doc map[string]any) {
			at(schemas(doc), "SearchResponse", "properties")["total"] = map[string]any{"type": "string"}
		}, "GET /v1/tools/search: answer 200 field total of type string, was integer"},
		{"a new required request field", func(doc map[string]any) { at(schemas(doc), "ExecuteRequest")["required"] = []any{"user_id"} },
			"POST /v1/execute: request field user_id now required"},
		{"a request field narrowed", func(doc map[string]any) {
			at(schemas(doc), "ExecuteRequest", "properties")["arguments"] = map[string]any{"type": "object"}
		}, "POST /v1/execute: request field arguments narrowed to object, was null, object, string"},
		{"a new required parameter", func(doc map[string]any) {
			get := at(doc, "paths", "/v1/executions", "get")
			get["parameters"] = append(get["parameters"].([]any), map[string]any{"name": "tenant", "in": "query", "required": true, "schema": map[string]any{"type": "string"}})
		}, "GET /v1/executions: parameter tenant now required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes := breakingChanges(t, openAPIDocument, edit(tc.edit))
			i := slices.IndexFunc(changes, func(c apiChange) bool { return c.String() == tc.want })
			if i < 0 {
				t.Fatalf("got %v, want %q among them", changes, tc.want)
			}
			c := changes[i]
			if named := "## A release\n\n`" + c.op + "` changed: `" + c.field + "` ..."; !c.namedIn(named) {
				t.Errorf("%q does not name %s", named, c)
			}
			if c.namedIn("## A release\n\nNothing broke.") {
				t.Errorf("notes without it name %s", c)
			}
		})
	}
	if c := breakingChanges(t, openAPIDocument, openAPIDocument); len(c) != 0 {
		t.Errorf("the description against itself: %v", c)
	}
}

// apiChange is a break of compatibility: the operation, what broke, and
// the field (or parameter) it concerns ("" for a route).
type apiChange struct{ op, what, field string }

func (c apiChange) String() string { return c.op + ": " + c.what }

func (c apiChange) namedIn(notes string) bool {
	return strings.Contains(notes, c.op) && (c.field == "" || strings.Contains(notes, c.field))
}

// breakingChanges lists the breaks of compatibility from prev to next.
func breakingChanges(t testing.TB, prev, next []byte) []apiChange {
	var a, b jsonDoc
	if err := json.Unmarshal(prev, &a.root); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(next, &b.root); err != nil {
		t.Fatal(err)
	}
	var out []apiChange
	oldPaths, newPaths := a.obj(a.root["paths"]), b.obj(b.root["paths"])
	for _, path := range slices.Sorted(maps.Keys(oldPaths)) {
		for _, method := range []string{"get", "put", "post", "patch", "delete"} {
			oldOp := a.obj(a.obj(oldPaths[path])[method])
			if oldOp == nil {
				continue
			}
			op := strings.ToUpper(method) + " " + path
			newOp := b.obj(b.obj(newPaths[path])[method])
			if newOp == nil {
				out = append(out, apiChange{op, "route removed", ""})
				continue
			}
			add := func(what, field string) { out = append(out, apiChange{op, what, field}) }
			a.compareParams(b, oldPaths[path], oldOp, newPaths[path], newOp, add)
			oldBody, newBody := a.jsonSchema(a.obj(oldOp["requestBody"])), b.jsonSchema(b.obj(newOp["requestBody"]))
			if newBody != nil {
				a.compareRequest(b, oldBody, newBody, "", add)
			}
			oldResps, newResps := a.obj(oldOp["responses"]), b.obj(newOp["responses"])
			for _, status := range slices.Sorted(maps.Keys(oldResps)) {
				if !strings.HasPrefix(status, "2") {
					continue
				}
				oldSchema := a.jsonSchema(a.obj(oldResps[status]))
				if _, ok := newResps[status]; !ok {
					add("answer "+status+" removed", "")
					continue
				}
				if oldSchema != nil {
					a.compareAnswer(b, oldSchema, b.jsonSchema(b.obj(newResps[status])), "answer "+status+" field ", "", add)
				}
			}
		}
	}
	return out
}

// jsonDoc reads a description with its references followed.
type jsonDoc struct{ root map[string]any }

// obj is v as an object, its $ref followed.
func (d jsonDoc) obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	for range 16 {
		ref, ok := m["$ref"].(string)
		if !ok {
			break
		}
		var cur any = d.root
		for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = d.obj(cur)[p]
		}
		m, _ = cur.(map[string]any)
	}
	return m
}

// jsonSchema is the application/json schema of a request body or answer.
func (d jsonDoc) jsonSchema(r map[string]any) map[string]any {
	return d.obj(d.obj(d.obj(r["content"])["application/json"])["schema"])
}

// props are a schema's properties and required names, allOf's included.
func (d jsonDoc) props(s map[string]any) (map[string]any, []string) {
	props := map[string]any{}
	var required []string
	for _, part := range append([]any{s}, asList(s["allOf"])...) {
		p := d.obj(part)
		maps.Copy(props, d.obj(p["properties"]))
		for _, r := range asList(p["required"]) {
			required = append(required, r.(string))
		}
	}
	return props, required
}

// types is the set of JSON types a schema admits (none for any).
func (d jsonDoc) types(s map[string]any) []string {
	var out []string
	switch t := s["type"].(type) {
	case string:
		out = []string{t}
	case []any:
		for _, x := range t {
			out = append(out, x.(string))
		}
	}
	if c, ok := s["const"]; ok {
		out = []string{jsonType(c)}
	}
	if out == nil { // an enum admits its values' types
		for _, v := range asList(s["enum"]) {
			out = append(out, jsonType(v))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

func asList(v any) []any { l, _ := v.([]any); return l }

func (d jsonDoc) compareParams(next jsonDoc, oldItem any, oldOp map[string]any, newItem any, newOp map[string]any, add func(what, field string)) {
	required := func(doc jsonDoc, item any, op map[string]any) map[string]bool {
		out := map[string]bool{}
		for _, p := range append(asList(doc.obj(item)["parameters"]), asList(op["parameters"])...) {
			p := doc.obj(p)
			out[p["in"].(string)+" "+p["name"].(string)] = p["required"] == true
		}
		return out
	}
	was, is := required(d, oldItem, oldOp), required(next, newItem, newOp)
	for _, k := range slices.Sorted(maps.Keys(is)) {
		if is[k] && !was[k] {
			name := strings.SplitN(k, " ", 2)[1]
			add("parameter "+name+" now required", name)
		}
	}
}

// compareRequest finds what a request valid before is refused for now.
func (d jsonDoc) compareRequest(next jsonDoc, old, cur map[string]any, prefix string, add func(what, field string)) {
	oldProps, oldReq := d.props(old)
	curProps, curReq := next.props(cur)
	for _, r := range curReq {
		if !slices.Contains(oldReq, r) {
			add("request field "+prefix+r+" now required", r)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(oldProps)) {
		o, c := d.obj(oldProps[name]), next.obj(curProps[name])
		if c == nil {
			if cur["additionalProperties"] == false {
				add("request field "+prefix+name+" removed", name) // now refused as unknown
			}
			continue
		}
		ot, ct := d.types(o), next.types(c)
		if len(ot) > 0 && len(ct) > 0 && !isSubset(ot, ct) || len(ot) == 0 && len(ct) > 0 {
			add(fmt.Sprintf("request field %s%s narrowed to %s, was %s", prefix, name, strings.Join(ct, ", "), orAny(ot)), name)
		}
		for _, v := range asList(o["enum"]) {
			if e := asList(c["enum"]); e != nil && !slices.ContainsFunc(e, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
				add(fmt.Sprintf("request field %s%s no longer takes %v", prefix, name, v), name)
			}
		}
		d.compareRequest(next, o, c, prefix+name+".", add)
	}
}

// compareAnswer finds what a client reading the old answer misses now.
func (d jsonDoc) compareAnswer(next jsonDoc, old, cur map[string]any, what, prefix string, add func(what, field string)) {
	oldProps, oldReq := d.props(old)
	curProps, curReq := next.props(cur)
	for _, name := range slices.Sorted(maps.Keys(oldProps)) {
		o, c := d.obj(oldProps[name]), next.obj(curProps[name])
		if c == nil {
			add(what+prefix+name+" removed", name)
			continue
		}
		if slices.Contains(oldReq, name) && !slices.Contains(curReq, name) {
			add(what+prefix+name+" no longer always given", name)
		}
		ot, ct := d.types(o), next.types(c)
		if len(ot) > 0 && !isSubset(ct, ot) {
			add(fmt.Sprintf("%s%s%s of type %s, was %s", what, prefix, name, orAny(ct), strings.Join(ot, ", ")), name)
		}
		d.compareAnswer(next, o, c, what, prefix+name+".", add)
	}
}

// isSubset reports whether every type of a is in b; "integer" is within
// "number".
func isSubset(a, b []string) bool {
	if len(b) == 0 {
		return true
	}
	for _, t := range a {
		if !slices.Contains(b, t) && !(t == "integer" && slices.Contains(b, "number")) {
			return false
		}
	}
	return len(a) > 0
}

func orAny(ts []string) string {
	if len(ts) == 0 {
		return "any"
	}
	return strings.Join(ts, ", ")
}
