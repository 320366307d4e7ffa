package plugins

import (
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blindexec/blindexec/internal/invisible"
)

// Imported text is shown to a model and indexed for search: markup is
// noise to both. PlainText turns the HTML some API descriptions are
// written in (Stripe's: "<p>Create a refund.</p>") into plain text with
// Markdown's few signs (paragraphs, "- " items, `code`); TitleFrom gives a
// tool without a title one from its description.

// htmlTag matches a tag of the HTML that descriptions use. Other
// <words> are text ("/v1/<currency>", "List<String>") and stay.
var htmlTag = regexp.MustCompile(`(?i)</?(p|br|a|code|pre|ul|ol|li|strong|b|em|i|u|div|span|h[1-6]|blockquote|table|thead|tbody|tr|td|th|hr|img|sup|sub|dl|dt|dd|tt|kbd|var|small|section|details|summary)(\s[^<>]*)?/?>`)

// PlainText is s without its HTML: block elements become line breaks
// (paragraphs a blank line), list items "- " lines, code `code`, links
// their text; entities are decoded. Text without HTML tags is returned as
// it is (Markdown stays Markdown, "a < b" stays).
func PlainText(s string) string {
	if !strings.Contains(s, "<") || !htmlTag.MatchString(s) {
		return s
	}
	var b strings.Builder
	pre := 0 // depth of <pre>: its line breaks and spaces are content
	last := 0
	text := func(t string) {
		t = html.UnescapeString(t)
		if pre == 0 {
			t = collapseSpace(t)
		}
		b.WriteString(t)
	}
	for _, m := range htmlTag.FindAllStringSubmatchIndex(s, -1) {
		text(s[last:m[0]])
		last = m[1]
		tag := strings.ToLower(s[m[2]:m[3]])
		closing := s[m[0]+1] == '/'
		switch tag {
		case "p", "div", "blockquote", "table", "ul", "ol", "dl", "section", "details", "h1", "h2", "h3", "h4", "h5", "h6":
			b.WriteString("\n\n")
		case "pre":
			if closing {
				pre = max(pre-1, 0)
				b.WriteString("\n```\n\n")
			} else {
				pre++
				b.WriteString("\n\n```\n")
			}
		case "br", "tr", "dt", "dd", "summary", "hr":
			b.WriteString("\n")
		case "li":
			if !closing {
				b.WriteString("\n- ")
			}
		case "td", "th":
			b.WriteString(" ")
		case "code", "tt", "kbd":
			if pre == 0 {
				b.WriteString("`")
			}
		}
	}
	text(s[last:])
	return tidy(b.String())
}

// collapseSpace turns each run of white space into one space, or a blank
// line if it holds one (a paragraph break of text around the HTML).
func collapseSpace(s string) string {
	var b strings.Builder
	space, breaks := false, 0
	flush := func() {
		switch {
		case breaks >= 2:
			b.WriteString("\n\n")
		case space:
			b.WriteByte(' ')
		}
		space, breaks = false, 0
	}
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			if r == '\n' {
				breaks++
			}
			continue
		}
		flush()
		b.WriteRune(r)
	}
	flush()
	return b.String()
}

var blankLines = regexp.MustCompile(`\n{3,}`)

// tidy trims each line (outside code fences) and keeps at most one blank
// line in a row.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	fenced := false
	for i, l := range lines {
		if strings.TrimSpace(l) == "```" {
			fenced = !fenced
			lines[i] = "```"
			continue
		}
		if !fenced {
			lines[i] = strings.TrimSpace(l)
		}
	}
	s = strings.Join(lines, "\n")
	return strings.TrimSpace(blankLines.ReplaceAllString(s, "\n\n"))
}

// MaxTitle is the most characters of a title made from a description.
const MaxTitle = 120

// TitleFrom is a title made of the first sentence of desc (plain text):
// up to a full stop followed by a space and a capital, a Chinese full
// stop, or a line break; without its final full stop, cut to MaxTitle
// characters. "" when desc has no text.
func TitleFrom(desc string) string {
	s := strings.TrimSpace(desc)
	s = strings.TrimLeft(s, "#>-* ") // a Markdown heading or item
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = firstSentence(s)
	s = strings.TrimSpace(strings.TrimRight(s, ".。:："))
	s = strings.ReplaceAll(s, "`", "")
	if utf8.RuneCountInString(s) > MaxTitle {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:MaxTitle-1])) + "…"
	}
	return s
}

// firstSentence is s up to the end of its first sentence. "e.g. the"
// and "v1.2" do not end one: the full stop must be followed by a space
// and a capital letter (or end s).
func firstSentence(s string) string {
	for i, r := range s {
		switch r {
		case '。', '！', '？':
			return s[:i]
		case '.', '!', '?':
			rest := s[i+1:]
			if rest == "" {
				return s[:i]
			}
			if !strings.HasPrefix(rest, " ") {
				continue
			}
			next, _ := utf8.DecodeRuneInString(strings.TrimLeft(rest, " "))
			if unicode.IsUpper(next) || !unicode.IsLetter(next) {
				return s[:i]
			}
		}
	}
	return s
}

// TitleFromName is a title made of a tool's name: its words
// ("create_issue", "createIssue", "create-issue": "Create issue").
func TitleFromName(name string) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ' || r == '/':
			flush()
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	if len(words) == 0 {
		return ""
	}
	s := strings.Join(words, " ")
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// modelTexts are the fields of a plugin a model reads as text, and
// parameters, whose schema's texts it reads too.
var modelTexts = []string{"name", "title", "description"}

// RemoveInvisible removes invisible characters (package
// internal/invisible) from what a model reads of p — its name, title,
// description and every title, description and $comment of its
// parameters and of an MCP tool's schemas as its server wrote them — and
// adds each removal to p.InvisibleRemoved. Every way a plugin enters
// passes here or through Parse: a tool's text cannot carry what the
// administrator does not see.
func (p *Plugin) RemoveInvisible() {
	for i, s := range []*string{&p.Name, &p.Title, &p.Description} {
		if out, f := invisible.Remove(*s); f.Count > 0 {
			*s = out
			p.InvisibleRemoved = append(p.InvisibleRemoved, invisible.Removal{Field: modelTexts[i], Count: f.Count, Kinds: f.Kinds})
		}
	}
	params, removed := invisible.Schema(p.Parameters, "parameters")
	p.Parameters = params
	p.InvisibleRemoved = append(p.InvisibleRemoved, removed...)
	p.removeInvisibleWritten()
}

// removeInvisibleWritten cleans an MCP tool's inputSchema and
// outputSchema as its server wrote them: an MCP client's tools/list
// carries them (WrittenParameters), and a model reads their texts as it
// reads the parameters'.
func (p *Plugin) removeInvisibleWritten() {
	for _, s := range []struct {
		schema *json.RawMessage
		field  string
	}{{&p.Execution.InputSchema, "execution.input_schema"}, {&p.Execution.OutputSchema, "execution.output_schema"}} {
		out, removed := invisible.Schema(*s.schema, s.field)
		*s.schema = out
		p.InvisibleRemoved = append(p.InvisibleRemoved, removed...)
	}
}
