package toolsearch

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"

	"github.com/blindexec/blindexec/plugins"
)

// field is one part of a tool's text with its BM25F weight and length
// normalization b (0: none, 1: full).
type field struct {
	name   string
	weight float64
	b      float64
	text   func(t *toolText) []string
	// boilerplate: drop the sentences that many tools of the catalog
	// share (dropBoilerplate).
	boilerplate bool
}

// engineFields: the name and title say what a tool does in a few words;
// keywords are an administrator's words for it; the description explains
// it at length (and GitHub's repeats boilerplate about tokens and scopes);
// parameters and path say what it acts on. A tag names the tool's group
// in the API's words, as a title does: the weights tuned jointly on the
// tuned-on sets (docs/tool-search.md, a ninth session) raised it from
// 1.5 to 3, the one change of that tuning that held on the held-out sets.
var engineFields = []field{
	{"name", 2, 0.5, func(t *toolText) []string { return []string{t.p.Name} }, false},
	{"title", 3, 0.5, func(t *toolText) []string { return []string{t.title} }, false},
	{"tags", 3, 0.3, func(t *toolText) []string { return t.p.Tags }, false},
	{"keywords", 3, 0.3, func(t *toolText) []string { return t.p.Keywords }, false},
	{"description", 1, 0.75, func(t *toolText) []string { return sentences(stripURLs(t.description)) }, true},
	{"path", 1, 0.5, pathWords, false},
	{"method", 0.5, 0, methodWords, false},
	{"parameter names", 1, 0.5, parameterNames, false},
	{"parameter descriptions", 0.3, 0.75, parameterDescriptions, true},
}

// sourceFields are the words of a tool's source and its tags'
// descriptions (issue 49 point 1): the source's name half as much as a
// tag, a tag's description as much as the tool's own: it is the API's own
// explanation of the tool's group ("Servers are virtual machines…").
// 0 to 2 were tried on the tuned-on sets only: 1 gained three requests
// (Hetzner's "show every machine I'm running", two of GitHub's) and lost
// none; 1.5 and 2 lost one of Slack's.
var sourceFields = []field{
	{"source", 1.5, 0.3, sourceWords, false},
	{"tag descriptions", 1, 0.75, tagDescriptions, false},
}

// responseField is the names of what a tool answers (its response's
// properties: plugins.Plugin.ResponseWords), a weak field: "how danceable
// is this track" finds Spotify's audio features by danceability. Measured
// on the tuned-on sets only (docs/tool-search.md, a sixth session): 0.3
// found one more of Spotify's requests and lost none; its words counted
// in the idf, or a generic name kept (weakTerms), lost Zoom's, Xero's,
// Slack's and GitHub's requests at any weight from 0.1.
var responseField = field{"response", 0.3, 0.75, func(t *toolText) []string { return t.p.ResponseWords }, false}

// weakTerms is a weak field's terms per document, kept to those that are
// rare among the field's documents (at most max(3, 0.3%) of them: id,
// name, created_at, count name no tool apart) and that some tool's own
// fields have, so that a weak field brings no term to the index, and
// what a request's word is expanded to or translated into is what it was
// without it.
func weakTerms(own [][]fieldDoc, fd field, tools []toolText, an analyzer) []fieldDoc {
	docs := make([]fieldDoc, len(tools))
	df := map[string]int{}
	for d := range tools {
		doc := fieldDoc{counts: map[string]int{}}
		for _, text := range fd.text(&tools[d]) {
			an.each(text, func(t string, _ int) {
				doc.counts[t]++
				doc.length++ // the field as written, for its normalization
			})
		}
		for t := range doc.counts {
			df[t]++
		}
		docs[d] = doc
	}
	known := map[string]bool{}
	for _, f := range own {
		for _, doc := range f {
			for t := range doc.counts {
				known[t] = true
			}
		}
	}
	limit := max(3, len(tools)*3/1000)
	for d := range docs {
		for t := range docs[d].counts {
			if df[t] > limit || !known[t] {
				delete(docs[d].counts, t)
			}
		}
	}
	return docs
}

// ownTerm reports whether document d has term t in one of its own fields.
func ownTerm(own [][]fieldDoc, d int, t string) bool {
	for _, f := range own {
		if f[d].counts[t] > 0 {
			return true
		}
	}
	return false
}

var baselineFields = []field{
	{"name", 1, 0.75, func(t *toolText) []string { return []string{t.p.Name} }, false},
	{"title", 1, 0.75, func(t *toolText) []string { return []string{t.p.Title} }, false},
	{"description", 1, 0.75, func(t *toolText) []string { return []string{t.p.Description} }, false},
}

// sentenceEnd cuts a description into sentences: at a full stop followed
// by a space, a Chinese full stop, or a line break.
var sentenceEnd = regexp.MustCompile(`[.!?]\s+|[。！？\n]+`)

func sentences(s string) []string { return sentenceEnd.Split(s, -1) }

// dropBoilerplate removes from each tool's texts those shared, word for
// word, by many tools of the catalog: "OAuth app tokens and personal access
// tokens (classic) need the repo scope to use this endpoint" follows
// hundreds of GitHub's operations, and a parameter "The name of the
// repository without the .git extension" hundreds more. Such text tells
// tools apart no better than nothing, and its words would weigh on the
// rarer tools that use them for what they do.
func dropBoilerplate(texts [][]string) [][]string {
	seen := map[string]int{}
	for _, ts := range texts {
		mine := map[string]bool{}
		for _, t := range ts {
			if k := boilerplateKey(t); k != "" && !mine[k] {
				mine[k] = true
				seen[k]++
			}
		}
	}
	limit := max(3, len(texts)/100)
	out := make([][]string, len(texts))
	for d, ts := range texts {
		for _, t := range ts {
			if seen[boilerplateKey(t)] <= limit {
				out[d] = append(out[d], t)
			}
		}
	}
	return out
}

func boilerplateKey(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

var urlPattern = regexp.MustCompile(`https?://[^\s)\]>"']+`)

// stripURLs drops links, whose host and path words would match requests
// about anything.
func stripURLs(s string) string { return urlPattern.ReplaceAllString(s, " ") }

// pathWords are the literal segments of an HTTP tool's path (not the
// host, not {templates}: those are parameters) or an MCP tool's original
// name.
func pathWords(t *toolText) []string {
	p := t.p
	if p.ExecType() == plugins.TypeMCP {
		return []string{p.Execution.ToolName}
	}
	var out []string
	for _, seg := range pathSegments(p) {
		if !strings.HasPrefix(seg, "{") {
			out = append(out, seg)
		}
	}
	return out
}

// braceEscaper lets url.Parse read a path with {templates}.
var braceEscaper = strings.NewReplacer("{", "%7B", "}", "%7D")

// pathSegments are the non-empty segments of an HTTP tool's path, its
// {templates} included.
func pathSegments(p *plugins.Plugin) []string {
	path := p.Execution.BaseURL
	if u, err := url.Parse(braceEscaper.Replace(path)); err == nil && u.Host != "" {
		path = u.Path
	}
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if seg != "" {
			out = append(out, seg)
		}
	}
	return out
}

// methodWords name what an HTTP method does, so "remove" finds a DELETE
// whose title says "unassign".
func methodWords(t *toolText) []string {
	switch strings.ToUpper(t.p.Execution.Method) {
	case "GET":
		return []string{"get"}
	case "POST":
		return []string{"create"}
	case "PUT", "PATCH":
		return []string{"update"}
	case "DELETE":
		return []string{"delete"}
	}
	return nil
}

// parameterNames are the names of the top-level parameters and the
// values they take (enum): what a tool acts on and how ("private",
// "has_wiki", state "open"), less the parameters of paging and sorting,
// which any listing has.
func parameterNames(t *toolText) []string {
	props := t.properties()
	out := make([]string, 0, len(props))
	for name, prop := range props {
		if pagingParameters[strings.ToLower(name)] {
			continue
		}
		out = append(out, name)
		for _, values := range [][]any{prop.Enum, prop.Items.Enum} {
			for _, v := range values {
				if s, ok := v.(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

var pagingParameters = setOf(`page per_page page_size pagesize pagenum page_num page_token pagetoken
limit offset cursor next_token sort order order_by orderby direction since before after`)

// parameterDescriptions are the titles and descriptions of the top-level
// parameters.
func parameterDescriptions(t *toolText) []string {
	props := t.properties()
	out := make([]string, 0, 2*len(props))
	for _, prop := range props {
		out = append(out, prop.Title, stripURLs(prop.Description))
	}
	return out
}

type property struct {
	Description string `json:"description"`
	Title       string `json:"title"`
	Enum        []any  `json:"enum"`
	Items       struct {
		Enum []any `json:"enum"`
	} `json:"items"`
}

// toolText is a tool while its fields are read, its parameters parsed
// once for the fields that need them.
type toolText struct {
	p                  *plugins.Plugin
	title, description string
	props              map[string]property
	parsed             bool
}

func newToolText(p *plugins.Plugin) toolText {
	desc := plugins.PlainText(p.Description)
	return toolText{p: p, title: titleOf(p.Title, desc), description: desc}
}

// titleOf is a tool's title, else its description's first sentence: a
// tool stored without a title (hand-written, or imported before titles
// were made) ranks as one with, and a source that fills titles does not
// win over one that does not.
func titleOf(title, desc string) string {
	if title != "" {
		return title
	}
	return plugins.TitleFrom(desc)
}

func (t *toolText) properties() map[string]property {
	if !t.parsed {
		t.parsed = true
		var schema struct {
			Properties map[string]property `json:"properties"`
		}
		if json.Unmarshal(t.p.Parameters, &schema) == nil {
			t.props = schema.Properties
		}
	}
	return t.props
}
