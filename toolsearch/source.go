package toolsearch

import (
	"strings"
	"unicode/utf8"

	"github.com/blindexec/blindexec/plugins"
)

// A request that names an API ("list my servers on hetzner", "用钉钉发个
// 通知") wants that API's tools, though another API's look-alike may
// share more of its words: a tool of a source the request names scores
// sourceBoost times more. The source's names are also words of its tools
// (field "source"), so "zoom" alone finds Zoom's tools.
const sourceBoost = 2.0

// sourceWords are the words of a tool's source: its name, title and
// aliases.
func sourceWords(t *toolText) []string {
	s := t.p.Source
	if s == nil {
		return nil
	}
	return append([]string{s.Name, s.Title}, s.Aliases...)
}

// tagDescriptions are the descriptions of a tool's tags, which explain
// an API's own words ("Floating IPs: a static IP you can move between
// servers").
func tagDescriptions(t *toolText) []string {
	s := t.p.Source
	if s == nil || len(s.TagDescriptions) == 0 {
		return nil
	}
	var out []string
	for _, tag := range t.p.Tags {
		if d := s.TagDescriptions[tag]; d != "" {
			out = append(out, sentences(stripURLs(plugins.PlainText(d)))...)
		}
	}
	return out
}

// genericTitleWords end a title without naming its API: "Zoom API", "Slack
// Web API", "DocuSign REST API v2.1".
var genericTitleWords = setOf(`api apis rest web http openapi swagger v1 v2 v3 endpoints endpoint
the service services server platform open`)

// indexedSource is a source of the index's tools: its names as the terms a
// request must all have to name it.
type indexedSource struct {
	src   *plugins.Source
	names [][]string
}

// sourceNames are the term lists that name s: its name, each alias, its
// title, and its title's first word unless generic ("Hetzner Cloud API"
// is also "hetzner").
func sourceNames(an analyzer, s *plugins.Source) [][]string {
	var out [][]string
	add := func(text string) {
		var ts []string
		an.each(text, func(t string, kind int) {
			if kind != kindCJKChar {
				ts = append(ts, t)
			}
		})
		if len(ts) > 0 {
			out = append(out, ts)
		}
	}
	add(s.Name)
	for _, a := range s.Aliases {
		add(a)
	}
	var head []string // the title without its generic words
	for _, w := range strings.Fields(s.Title) {
		if !genericTitleWords[strings.ToLower(w)] && !isNumber(strings.Trim(w, "v.")) {
			head = append(head, w)
		}
	}
	add(strings.Join(head, " "))
	if len(head) > 1 {
		if r, _ := utf8.DecodeRuneInString(head[0]); !isCJK(r) || utf8.RuneCountInString(head[0]) <= 4 {
			add(head[0])
		}
	}
	return out
}

// indexSources collects the sources of the index's tools.
func (ix *Index) indexSources(an analyzer) {
	ix.docSource = make([]int32, len(ix.docs))
	at := map[*plugins.Source]int32{}
	for d, p := range ix.docs {
		ix.docSource[d] = -1
		if p.Source == nil {
			continue
		}
		i, ok := at[p.Source]
		if !ok {
			i = int32(len(ix.sources))
			at[p.Source] = i
			ix.sources = append(ix.sources, indexedSource{p.Source, sourceNames(an, p.Source)})
		}
		ix.docSource[d] = i
	}
}

// namedSources are the sources a request names: all the terms of one of
// their names are the request's own.
func (ix *Index) namedSources(query string) []int32 {
	if len(ix.sources) == 0 {
		return nil
	}
	own := map[string]bool{}
	ix.an.each(query, func(t string, kind int) { own[t] = true })
	var out []int32
	for i, s := range ix.sources {
		for _, name := range s.names {
			all := true
			for _, t := range name {
				all = all && own[t]
			}
			if all {
				out = append(out, int32(i))
				break
			}
		}
	}
	return out
}

// SourceInfo is a source of an index's tools: search_tools lists them so
// that a model can name the one a task is about.
type SourceInfo struct {
	Name, Title string
	Tools       int
}

// Sources are the sources of the index's tools, in the order first met,
// with how many tools each holds.
func (ix *Index) Sources() []SourceInfo {
	out := make([]SourceInfo, len(ix.sources))
	for i, s := range ix.sources {
		out[i] = SourceInfo{Name: s.src.Name, Title: s.src.Title}
	}
	for _, i := range ix.docSource {
		if i >= 0 {
			out[i].Tools++
		}
	}
	return out
}
