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
	text   func(p *plugins.Plugin) []string
}

// engineFields: the name and title say what a tool does in a few words;
// keywords are an administrator's words for it; the description explains
// it at length (and GitHub's repeats boilerplate about tokens and scopes);
// parameters and path say what it acts on.
var engineFields = []field{
	{"name", 2, 0.5, func(p *plugins.Plugin) []string { return []string{p.Name} }},
	{"title", 3, 0.5, func(p *plugins.Plugin) []string { return []string{p.Title} }},
	{"tags", 1.5, 0.3, func(p *plugins.Plugin) []string { return p.Tags }},
	{"keywords", 3, 0.3, func(p *plugins.Plugin) []string { return p.Keywords }},
	{"description", 1, 0.75, func(p *plugins.Plugin) []string { return []string{stripURLs(p.Description)} }},
	{"path", 1, 0.5, pathWords},
	{"method", 0.5, 0, methodWords},
	{"parameter names", 1, 0.5, parameterNames},
	{"parameter descriptions", 0.3, 0.75, parameterDescriptions},
}

var baselineFields = []field{
	{"name", 1, 0.75, func(p *plugins.Plugin) []string { return []string{p.Name} }},
	{"title", 1, 0.75, func(p *plugins.Plugin) []string { return []string{p.Title} }},
	{"description", 1, 0.75, func(p *plugins.Plugin) []string { return []string{p.Description} }},
}

var urlPattern = regexp.MustCompile(`https?://[^\s)\]>"']+`)

// stripURLs drops links, whose host and path words would match requests
// about anything.
func stripURLs(s string) string { return urlPattern.ReplaceAllString(s, " ") }

// pathWords are the literal segments of an HTTP tool's path (not the
// host, not {templates}: those are parameters) or an MCP tool's original
// name.
func pathWords(p *plugins.Plugin) []string {
	if p.ExecType() == plugins.TypeMCP {
		return []string{p.Execution.ToolName}
	}
	path := p.Execution.BaseURL
	if u, err := url.Parse(strings.NewReplacer("{", "%7B", "}", "%7D").Replace(path)); err == nil && u.Host != "" {
		path = u.Path
	}
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if seg != "" && !strings.HasPrefix(seg, "{") {
			out = append(out, seg)
		}
	}
	return out
}

// methodWords name what an HTTP method does, so "remove" finds a DELETE
// whose title says "unassign".
func methodWords(p *plugins.Plugin) []string {
	switch strings.ToUpper(p.Execution.Method) {
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

// parameterNames are the names of the top-level parameters: what a tool
// acts on ("private", "has_wiki").
func parameterNames(p *plugins.Plugin) []string {
	props := properties(p)
	out := make([]string, 0, len(props))
	for name := range props {
		out = append(out, name)
	}
	return out
}

// parameterDescriptions are the titles and descriptions of the top-level
// parameters.
func parameterDescriptions(p *plugins.Plugin) []string {
	props := properties(p)
	out := make([]string, 0, 2*len(props))
	for _, prop := range props {
		out = append(out, prop.Title, stripURLs(prop.Description))
	}
	return out
}

type property struct {
	Description string `json:"description"`
	Title       string `json:"title"`
}

func properties(p *plugins.Plugin) map[string]property {
	var schema struct {
		Properties map[string]property `json:"properties"`
	}
	if json.Unmarshal(p.Parameters, &schema) != nil {
		return nil
	}
	return schema.Properties
}
