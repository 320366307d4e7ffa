package plugins

import (
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/invisible/invisibletest"
)

func TestPlainText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<p>Create a refund.</p>", "Create a refund."},
		{"<p>With <a href=\"/docs/connect\">Connect</a>, you can.</p>\n\n<p>Second &amp; last.</p>", "With Connect, you can.\n\nSecond & last."},
		{"Use <code>GET /v1/&lt;currency&gt;</code> or /v1/<currency>.<br/>Next line", "Use `GET /v1/<currency>` or /v1/<currency>.\nNext line"},
		{"<ul><li>one</li><li><strong>two</strong></li></ul>", "- one\n- two"},
		{"<pre>a\n  b</pre>", "```\na\n  b\n```"},
		{"Markdown **stays**, a < b and List<String> too.\n\nParagraph.", "Markdown **stays**, a < b and List<String> too.\n\nParagraph."},
		{"Summary\n\n<p>Body</p>", "Summary\n\nBody"},
		{"", ""},
	} {
		if got := PlainText(tc.in); got != tc.want {
			t.Errorf("PlainText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTitleFrom(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Create a refund.", "Create a refund"},
		{"Returns a list of charges, e.g. today's. The charges are sorted.", "Returns a list of charges, e.g. today's"},
		{"Archives a conversation.\nMore.", "Archives a conversation"},
		{"获取用户列表。分页查询", "获取用户列表"},
		{"Uses v1.2 of the API", "Uses v1.2 of the API"},
		{"## Heading\nText", "Heading"},
		{"", ""},
		{strings.Repeat("word ", 40), strings.TrimSpace(strings.Repeat("word ", 24)) + "…"},
	} {
		if got := TitleFrom(tc.in); got != tc.want {
			t.Errorf("TitleFrom(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTitleFromName(t *testing.T) {
	for in, want := range map[string]string{"create_issue": "Create issue", "listPullRequests": "List pull requests", "get-file": "Get file", "": ""} {
		if got := TitleFromName(in); got != want {
			t.Errorf("TitleFromName(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzPlainText: any description converts without panicking, text without
// tags is left alone, and converting twice changes nothing more.
func FuzzPlainText(f *testing.F) {
	for _, s := range []string{"<p>a</p>", "<pre>x</pre>", "a < b", "<li>x<code>y</code>", "&amp;<br>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := PlainText(s)
		if !htmlTag.MatchString(s) && out != s {
			t.Fatalf("text without tags changed: %q → %q", s, out)
		}
		_ = TitleFrom(out)
	})
}

// TestParseRemovesInvisible: a document's name, title, description and
// parameter texts lose their invisible characters before they are
// checked; the report says where; a report sent in is ignored.
func TestParseRemovesInvisible(t *testing.T) {
	smuggled := invisibletest.Tags(invisibletest.Instruction)
	doc := `{
  // pasted by an administrator
  "name": "get\u200buser",
  "title": "Get a user` + smuggled + `",
  "description": "Reads one user.\u202e",
  "parameters": {"type": "object", "properties": {"id": {"type": "string", "description": "The id\u2066."}}},
  "execution": {"method": "GET", "base_url": "https://api.example.com/users"},
  "invisible_removed": [{"field": "remark", "count": 9, "kinds": ["tag"]}]
}`
	p, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "getuser" || p.Title != "Get a user" || p.Description != "Reads one user." {
		t.Errorf("got name %q, title %q, description %q", p.Name, p.Title, p.Description)
	}
	if tool := p.Tool(nil); !strings.Contains(string(tool.Function.Parameters), `"The id."`) || tool.Function.Name != "getuser" {
		t.Errorf("the model reads %s with parameters %s", tool.Function.Name, tool.Function.Parameters)
	}
	var got []string
	for _, r := range p.InvisibleRemoved {
		got = append(got, r.String())
	}
	want := []string{
		"name: 1 invisible character removed (zero_width)",
		"title: 28 invisible characters removed (tag)",
		"description: 1 invisible character removed (bidi)",
		"parameters.properties.id.description: 1 invisible character removed (bidi)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("InvisibleRemoved = %q\nwant %q", got, want)
	}
	clean, err := Parse([]byte(strings.NewReplacer(`\u200b`, "", smuggled, "", `\u202e`, "", `\u2066`, "").Replace(doc)))
	if err != nil {
		t.Fatal(err)
	}
	if clean.InvisibleRemoved != nil {
		t.Errorf("a clean document reports %v", clean.InvisibleRemoved)
	}
}

// TestParseRemovesInvisibleWritten (mcp78): an MCP plugin's schemas as
// its server wrote them, which MCP clients' tools/list carries, lose
// their invisible characters when a document is parsed, as parameters
// do, and the report names them.
func TestParseRemovesInvisibleWritten(t *testing.T) {
	smuggled := invisibletest.Tags(invisibletest.Instruction)
	doc := `{"name": "find", "description": "Finds.",
  "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
  "execution": {"type": "mcp", "mcp_id": "s1", "tool_name": "find",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string", "description": "A query` + smuggled + `"}}},
    "output_schema": {"type": "object", "description": "\u202eOut"}}}`
	p, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if w := string(p.WrittenParameters()); strings.ContainsRune(w, '\U000E0069') || !strings.Contains(w, `"A query"`) {
		t.Errorf("tools/list would carry %q", w)
	}
	if o := string(p.Execution.OutputSchema); strings.Contains(o, `\u202e`) || strings.ContainsRune(o, '\u202e') {
		t.Errorf("the outputSchema %q", o)
	}
	var got []string
	for _, r := range p.InvisibleRemoved {
		got = append(got, r.Field)
	}
	if want := []string{"execution.input_schema.properties.q.description", "execution.output_schema.description"}; !slices.Equal(got, want) {
		t.Errorf("InvisibleRemoved names %q, want %q", got, want)
	}
}
