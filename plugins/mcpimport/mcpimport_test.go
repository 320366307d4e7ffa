package mcpimport_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/invisible/invisibletest"
	"github.com/blindexec/blindexec/plugins/mcpimport"
)

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{"rb.answer": "rb_answer", "a b/c": "a_b_c", "ok-name_1": "ok-name_1", "": "tool", "工具": "______"} {
		if got := mcpimport.SanitizeName(in); got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParametersSchema(t *testing.T) {
	tools := listTools(t, mcptest.New(t))
	byName := map[string]*sdk.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}

	params, warnings, err := mcpimport.Parameters(byName["create_order"].InputSchema, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := string(params)
	if strings.Contains(s, `"$defs":`) || strings.Contains(s, `"$ref":`) || !strings.Contains(s, `"city"`) || !strings.Contains(s, `"sku"`) {
		t.Errorf("create_order parameters = %s, want $defs inlined and removed", s)
	}
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "broken") }) {
		t.Errorf("warnings = %q, want the unresolvable property degraded", warnings)
	}

	params, _, err = mcpimport.Parameters(byName["tree"].InputSchema, 0)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	json.Unmarshal(params, &tree)
	root := tree["properties"].(map[string]any)["root"].(map[string]any)
	if root["type"] != "object" || root["properties"] == nil {
		t.Fatalf("tree root = %v", root)
	}
	// The cycle Node → children → Node is cut: somewhere below, a node
	// keeps its type and loses its properties.
	if strings.Contains(string(params), `"$ref":`) || strings.Count(string(params), `"label"`) > 3 {
		t.Errorf("tree parameters = %s, want the cycle pruned within depth 3", params)
	}
}

// TestParametersEmptyAndWrapped: an MCP tool's empty inputSchema becomes an
// object, the only place where a type is forced; nested schemas keep theirs.
func TestParametersEmptyAndWrapped(t *testing.T) {
	for in, want := range map[string]string{
		`{}`: `{"type":"object"}`,
		`{"type":"object","properties":{"sort":{"allOf":[{"$ref":"#/$defs/Sort"}],"default":"name"}},"$defs":{"Sort":{"enum":["name","date"],"type":"string"}}}`: `{"properties":{"sort":{"default":"name","enum":["name","date"],"type":"string"}},"type":"object"}`,
	} {
		var v any
		json.Unmarshal([]byte(in), &v)
		got, _, err := mcpimport.Parameters(v, 0)
		if err != nil || string(got) != want {
			t.Errorf("Parameters(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

// listTools is the tools/list answer of up, through an SDK client.
func listTools(t *testing.T, up *mcptest.Server) []*sdk.Tool {
	t.Helper()
	ctx := context.Background()
	clientSide, serverSide := sdk.NewInMemoryTransports()
	ss, err := up.MCP.Connect(ctx, serverSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// BenchmarkParameters is the schema conversion of one MCP tool with $defs
// and a recursive type (seed 004 allows 100 ms; the target is under 1 ms).
func BenchmarkParameters(b *testing.B) {
	var in map[string]any
	json.Unmarshal([]byte(`{"type":"object","$defs":{
		"Address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["city"]},
		"Node":{"type":"object","properties":{"label":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}},
		"properties":{"ship_to":{"$ref":"#/$defs/Address"},"bill_to":{"$ref":"#/$defs/Address"},"tree":{"$ref":"#/$defs/Node"}}}`), &in)
	for b.Loop() {
		if _, _, err := mcpimport.Parameters(in, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTitles(t *testing.T) {
	srv := mcpimport.Server{ID: "s1", Name: "s"}
	for _, tc := range []struct {
		tool             sdk.Tool
		title, described string
	}{
		{sdk.Tool{Name: "a", Title: "Given", Description: "Does a."}, "Given", "Does a."},
		{sdk.Tool{Name: "b", Annotations: &sdk.ToolAnnotations{Title: "Annotated"}, Description: "Does b."}, "Annotated", "Does b."},
		{sdk.Tool{Name: "c", Description: "<p>Creates a <b>ticket</b>. Needs a queue.</p>"}, "Creates a ticket", "Creates a ticket. Needs a queue."},
		{sdk.Tool{Name: "list_open_tickets"}, "List open tickets", "list_open_tickets"},
	} {
		tc.tool.InputSchema = map[string]any{"type": "object"}
		p, _, err := mcpimport.Convert(srv, &tc.tool, tc.tool.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.Title != tc.title || p.Description != tc.described {
			t.Errorf("%s: title %q, description %q; want %q, %q", tc.tool.Name, p.Title, p.Description, tc.title, tc.described)
		}
	}
}

// TestSchemasAsWritten: a tool's inputSchema is kept as its server wrote
// it beside the model's resolved form — tree's recursive $defs whole —
// unless it does not compile as written (create_order's $ref to a missing
// definition: kept resolved, with a warning); a $schema the engine does
// not accept fails the tool (issue 48 point 5).
func TestSchemasAsWritten(t *testing.T) {
	byName := map[string]*sdk.Tool{}
	for _, tl := range listTools(t, mcptest.New(t)) {
		byName[tl.Name] = tl
	}
	resolved, written, _, err := mcpimport.Schemas(byName["tree"].InputSchema, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(written), `"$defs":{"Node"`) || !strings.Contains(string(written), `"$ref":"#/$defs/Node"`) || strings.Contains(string(resolved), `"$ref"`) {
		t.Errorf("tree: written %s, resolved %s", written, resolved)
	}
	_, written, warnings, err := mcpimport.Schemas(byName["create_order"].InputSchema, 0)
	if err != nil || written != nil || !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "listed as resolved") }) {
		t.Errorf("create_order: written %s, warnings %q, err %v", written, warnings, err)
	}
	if _, _, _, err := mcpimport.Schemas(map[string]any{"$schema": "https://example.com/mine", "type": "object"}, 0); err == nil || !strings.Contains(err.Error(), "accepted JSON Schema dialect") {
		t.Errorf("an unknown dialect: %v", err)
	}
}

// TestOutputWords: a tool's outputSchema gives search the names of what
// it answers, as an OpenAPI operation's response does; a tool without one
// answers none.
func TestOutputWords(t *testing.T) {
	srv := mcpimport.Server{ID: "s1", Name: "s"}
	for _, tc := range []struct {
		name   string
		output any
		want   string
	}{
		{"an outputSchema", map[string]any{"type": "object", "$defs": map[string]any{"Row": map[string]any{"properties": map[string]any{"amount_due": map[string]any{}}}},
			"properties": map[string]any{"rows": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/Row"}}}}, "rows amount_due"},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := sdk.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}, OutputSchema: tc.output}
			p, _, err := mcpimport.Convert(srv, &tool, tool.Name, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(p.ResponseWords, " "); got != tc.want {
				t.Errorf("response words %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConvertRemovesInvisible (mcp78): an MCP server's tool whose
// inputSchema and outputSchema carry invisible characters in their texts
// (tag characters spelling an instruction, a bidi override) reaches no
// model with them: not through the resolved parameters, nor through the
// schemas as the server wrote them, which an MCP client's tools/list
// carries (WrittenParameters, the outputSchema). Before, only the
// resolved form was cleaned.
func TestConvertRemovesInvisible(t *testing.T) {
	smuggled := invisibletest.Tags(invisibletest.Instruction)
	in := map[string]any{"type": "object", "$defs": map[string]any{"Id": map[string]any{"type": "string", "description": "An id" + smuggled}},
		"properties": map[string]any{"id": map[string]any{"$ref": "#/$defs/Id"}, "q": map[string]any{"type": "string", "description": "A query\u202e."}}}
	out := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean", "title": "OK" + smuggled}}}
	p, _, err := mcpimport.Convert(mcpimport.Server{ID: "s1", Name: "s"}, &sdk.Tool{Name: "find", Description: "Finds.", InputSchema: in, OutputSchema: out}, "find", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Execution.InputSchema) == 0 {
		t.Fatal("the schema as written was not kept: nothing to check")
	}
	for what, b := range map[string][]byte{"parameters": p.Parameters, "the written inputSchema": p.WrittenParameters(), "the outputSchema": p.Execution.OutputSchema} {
		if s := string(b); strings.ContainsRune(s, '\U000E0069') || strings.ContainsRune(s, '\u202e') || strings.Contains(s, `\u202e`) || strings.Contains(s, `\udb40`) {
			t.Errorf("%s keeps invisible characters: %q", what, s)
		}
	}
	if !strings.Contains(string(p.WrittenParameters()), `"$ref":"#/$defs/Id"`) || !strings.Contains(string(p.WrittenParameters()), `"An id"`) {
		t.Errorf("the written inputSchema is not the server's, cleaned: %s", p.WrittenParameters())
	}
	var got []string
	for _, r := range p.InvisibleRemoved {
		got = append(got, r.Field)
	}
	for _, want := range []string{"execution.input_schema.$defs.Id.description", "execution.input_schema.properties.q.description", "execution.output_schema.properties.ok.title"} {
		if !slices.Contains(got, want) {
			t.Errorf("InvisibleRemoved names %q, not %s", got, want)
		}
	}
}
