package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/store"
)

// TestPayloadFieldsDescribed: the bodies RuoYi's side posts are decoded
// strictly (an unknown field is 400), so the description must name every
// field the engine reads, no more and no fewer, and refuse the others
// (additionalProperties: false): a client generated from it (Java's
// included) then sends what the engine takes. Checked at every level the
// engine decodes into a struct: the payload of /v1/execute, the runtime
// payload of /v1/runs with its user and its options (options.tool_search
// and options.pinned_tools are SPEC §7a's stable names), a resume, an
// agent, a connection's authorization.
func TestPayloadFieldsDescribed(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	resolve := func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			return schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		}
		return s
	}
	body := func(route string) map[string]any {
		method, path, _ := strings.Cut(route, " ")
		op := doc["paths"].(map[string]any)[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
		return resolve(op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any))
	}
	property := func(s map[string]any, name string) map[string]any {
		p, _ := s["properties"].(map[string]any)[name].(map[string]any)
		if p == nil {
			return map[string]any{}
		}
		return resolve(p)
	}
	run := body("POST /v1/runs")
	for _, c := range []struct {
		name   string
		schema map[string]any
		typ    reflect.Type
	}{
		{"POST /v1/execute", body("POST /v1/execute"), reflect.TypeFor[ExecuteRequest]()},
		{"POST /v1/runs", run, reflect.TypeFor[RunRequest]()},
		{"POST /v1/runs: user", property(run, "user"), reflect.TypeFor[PayloadUser]()},
		{"POST /v1/runs: options", property(run, "options"), reflect.TypeFor[loop.Options]()},
		{"POST /v1/runs/{run_id}/resume", body("POST /v1/runs/{run_id}/resume"), reflect.TypeFor[ResumeRequest]()},
		{"POST /v1/agents", body("POST /v1/agents"), reflect.TypeFor[catalog.Agent]()},
		{"PUT /v1/agents/{name}", body("PUT /v1/agents/{name}"), reflect.TypeFor[catalog.Agent]()},
		{"POST /v1/connections/{provider}/authorize", body("POST /v1/connections/{provider}/authorize"), reflect.TypeFor[authorizeRequest]()},
	} {
		var described []string
		props, _ := c.schema["properties"].(map[string]any)
		for name := range props {
			described = append(described, name)
		}
		slices.Sort(described)
		var read []string // as the engine reads a body's keys (unknownField)
		for _, f := range jsonFields(c.typ) {
			read = append(read, f.name)
		}
		slices.Sort(read)
		if !slices.Equal(described, read) {
			t.Errorf("%s: the description names %v; the engine reads %v", c.name, described, read)
		}
		if c.schema["additionalProperties"] != false {
			t.Errorf("%s: the engine refuses other fields; the description must say additionalProperties: false", c.name)
		}
	}
}

// TestAnswerFieldsDescribed: answers the engine writes from a Go type
// name in the description every field the type writes (a generated
// client drops a field it does not know): the call's envelope, a run's
// reply and its pending items, the import sources (GET /v1/sources, which
// RuoYi's side reads to show where tools came from), the MCP servers.
func TestAnswerFieldsDescribed(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		schema string
		typ    reflect.Type
	}{
		{"ExecuteResult", reflect.TypeFor[engine.Result]()},
		{"Source", reflect.TypeFor[store.SourceSummary]()},
		{"RunReply", reflect.TypeFor[loop.Reply]()},
		{"PendingItem", reflect.TypeFor[loop.Pending]()},
		{"MCPServer", reflect.TypeFor[store.MCPServer]()},
	} {
		for _, f := range jsonFields(c.typ) {
			if _, ok := doc.Components.Schemas[c.schema].Properties[f.name]; !ok {
				t.Errorf("%s: the engine writes %s (%s), which the description does not name", c.schema, f.name, c.typ)
			}
		}
	}
}
