package mcpimport_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/mcpimport"
)

var pluginName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// FuzzConvert: a tool of an MCP server's tools/list answer, whatever it
// holds, is converted or refused with a ConversionError, never a panic.
// A converted tool calls the server's tool by the name the server gave,
// under a name of the plugin rule; an untrusted server's annotations
// never make it less than consequential; and the plugin is one the
// protocol takes back as a document (what the catalog holds its rows to).
func FuzzConvert(f *testing.F) {
	for _, s := range []string{
		`{"name":"create_order","description":"Create an order.","inputSchema":{"type":"object","properties":{"sku":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["sku"]}}`,
		`{"name":"rb.answer","title":"Answer","inputSchema":{"type":"object","$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}}},"annotations":{"readOnlyHint":true}}`,
		`{"name":"read\u200bfile","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"total":{"type":"number"}}}}`,
		`{"name":"loop","inputSchema":{"type":"object","properties":{"n":{"$ref":"#"}}}}`,
		`{"name":"d","inputSchema":{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}}`,
		`{"name":"工具","description":"<b>bold</b> \u202etext","inputSchema":{"type":"object","properties":{"a b":{"type":"string","enum":[1,"x",null]}}}}`,
		`{"name":"x","inputSchema":{"type":"object","properties":{"p":{"type":["string","null"],"format":"date-time","pattern":"["}}}}`,
	} {
		f.Add([]byte(s), "srv", false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, srvName string, trusted bool) {
		if len(raw) > 64<<10 {
			t.Skip() // the limits of a schema are FuzzResolve's and the plugins' fuzzers'
		}
		var tool sdk.Tool
		if json.Unmarshal(raw, &tool) != nil {
			return
		}
		names := mcpimport.Names("1", srvName, tool.Name)
		for _, n := range names {
			if !pluginName.MatchString(n) {
				t.Fatalf("Names(%q, %q) = %q", srvName, tool.Name, names)
			}
		}
		srv := mcpimport.Server{ID: "1", Name: srvName, Trusted: trusted}
		p, _, err := mcpimport.Convert(srv, &tool, names[0], 0)
		if err != nil {
			var ce *mcpimport.ConversionError
			if !errors.As(err, &ce) || ce.Tool != tool.Name {
				t.Fatalf("Convert(%s): %v is not the tool's ConversionError", raw, err)
			}
			return
		}
		if p.Execution.ToolName != tool.Name || p.Execution.MCPID != "1" || p.Name != names[0] {
			t.Fatalf("Convert(%s) calls %q of %q as %q", raw, p.Execution.ToolName, p.Execution.MCPID, p.Name)
		}
		if !trusted && p.ConsequentialHint != nil && !*p.ConsequentialHint {
			t.Fatalf("an untrusted server's annotations made %s not consequential", raw)
		}
		doc, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plugins.Parse(doc); err != nil {
			t.Fatalf("the plugin of %s is refused as a document: %v\n%s", raw, err, doc)
		}
	})
}
