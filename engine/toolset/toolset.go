// Package toolset decides what an LLM client is shown of a set of tools
// too large to list (deferred loading). Past a threshold the client gets
// the meta-tool search_tools (over MCP also call_tool), the pinned tools,
// and a working set of the tools its searches found, never more than the
// threshold at once: the least recently used are dropped first.
//
// Clients have hard limits (OpenAI refuses more than 128 tools in a
// request, Cursor stops at 40) and models choose worse past 30 to 50
// tools, so a large catalog is searched, not listed. The engine's LLM loop
// (engine/loop) and its MCP server (engine/mcpserver) share this package.
package toolset

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
)

// Settings of the operator.
const (
	// EnvMode is the default mode: auto, always or off (default auto).
	// cmd/blindexec reads these settings.
	EnvMode = "BLINDEXEC_TOOL_SEARCH"
	// EnvThreshold is the number of tools past which auto switches search
	// on, and the most tools shown at once (default DefaultThreshold).
	EnvThreshold = "BLINDEXEC_TOOL_SEARCH_THRESHOLD"
	// EnvPinned lists, comma-separated, the tools the MCP server shows
	// beside the meta-tools when search is on.
	EnvPinned = "BLINDEXEC_TOOL_SEARCH_PINNED"

	DefaultThreshold = 40
	// MaxThreshold keeps the threshold plus the meta-tools within the
	// 128 tools OpenAI accepts in a request.
	MaxThreshold = 120
	// DefaultLimit and MaxLimit bound the matches of one search.
	DefaultLimit = 5
	MaxLimit     = 20
)

// Mode says when search replaces the full list.
type Mode string

// Modes.
const (
	ModeAuto   Mode = "auto"   // when the tools outnumber the threshold
	ModeAlways Mode = "always" // whatever their number
	ModeOff    Mode = "off"    // never: every tool is listed
)

// ParseMode reads a mode; "" is the empty Mode (the default applies).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", ModeAuto, ModeAlways, ModeOff:
		return m, nil
	}
	return "", fmt.Errorf("%q is not a tool search mode (auto, always or off)", s)
}

// Config is the operator's setting; its zero value is auto over 40.
type Config struct {
	Mode      Mode
	Threshold int
	// Pinned are the tools an MCP server shows beside the meta-tools.
	Pinned []string
	// MaxQueryChars bounds a search query (toolsearch.DefaultMaxQueryChars
	// when 0).
	MaxQueryChars int
}

// Names splits a comma-separated list of tool names (EnvPinned).
func Names(list string) []string {
	var out []string
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// Limit is the threshold in force.
func (c Config) Limit() int {
	if c.Threshold <= 0 {
		return DefaultThreshold
	}
	return min(c.Threshold, MaxThreshold)
}

// Search reports whether n tools are searched rather than listed, under
// mode (the empty Mode: the configured one, else auto).
func (c Config) Search(mode Mode, n int) bool {
	if mode == "" {
		mode = c.Mode
	}
	switch mode {
	case ModeAlways:
		return true
	case ModeOff:
		return false
	}
	return n > c.Limit()
}

// Searcher finds tools by a request in people's words: *toolsearch.Index.
type Searcher interface {
	Search(query string, limit int) []toolsearch.Result
}

// usableRanker ranks within a caller's usable tools while it scores
// (*toolsearch.Index, the API's catalog searcher).
type usableRanker interface {
	RankUsable(query string, n int, usable *toolsearch.Filter) ([]toolsearch.Result, int, error)
}

// Within returns the first limit tools of s matching query that usable
// keeps (nil: every one), best first: a page full of tools the caller
// may use. A Searcher that cannot filter while it ranks has its first
// toolsearch.MaxLimit filtered.
func Within(s Searcher, query string, limit int, usable *toolsearch.Filter) ([]toolsearch.Result, error) {
	if usable == nil {
		return s.Search(query, limit), nil
	}
	if r, ok := s.(usableRanker); ok {
		rs, _, err := r.RankUsable(query, limit, usable)
		return rs, err
	}
	rs, err := usable.Results(s.Search(query, toolsearch.MaxLimit))
	return rs[:min(limit, len(rs))], err
}

// SearchArgs are the arguments of search_tools.
type SearchArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
}

// ErrArguments is wrapped by the errors of ParseSearchArgs and
// ParseCallArgs: the caller gave arguments the meta-tool cannot take.
var ErrArguments = errors.New("invalid arguments")

// ParseSearchArgs reads search_tools' arguments; Limit defaults to
// DefaultLimit and is cut to MaxLimit. A query of more than maxQuery
// characters is refused (toolsearch.CheckQuery).
func ParseSearchArgs(raw []byte, maxQuery int) (SearchArgs, error) {
	var a SearchArgs
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("%w: %v; send {\"query\": \"what the tool should do\", \"limit\": 5}", ErrArguments, err)
	}
	a.Query = strings.TrimSpace(a.Query)
	if a.Query == "" {
		return a, fmt.Errorf("%w: query is required: say in a few words what the tool should do", ErrArguments)
	}
	if err := toolsearch.CheckQuery(a.Query, maxQuery); err != nil {
		return a, fmt.Errorf("%w: %w", ErrArguments, err)
	}
	if a.Limit <= 0 {
		a.Limit = DefaultLimit
	}
	a.Limit = min(a.Limit, MaxLimit)
	return a, nil
}

// CallArgs are the arguments of call_tool.
type CallArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ParseCallArgs reads call_tool's arguments; absent arguments are {}.
func ParseCallArgs(raw []byte) (CallArgs, error) {
	var a CallArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("%w: %v; send {\"name\": \"a tool search_tools found\", \"arguments\": {...}}", ErrArguments, err)
	}
	if a.Name == "" {
		return a, fmt.Errorf("%w: name is required: a tool search_tools found", ErrArguments)
	}
	if len(a.Arguments) == 0 || string(a.Arguments) == "null" {
		a.Arguments = json.RawMessage("{}")
	}
	if a.Arguments[0] != '{' {
		return a, fmt.Errorf("%w: arguments must be a JSON object of the tool's parameters", ErrArguments)
	}
	return a, nil
}

// The meta-tools as the client sees them.
const (
	SearchDescription = "Search the catalog of tools, which is too large to list, for those that fit a task. " +
		"Describe the task in a few words (\"list the open pull requests of a repository\"); " +
		"the matching tools come back with a one-line description and their parameter names, and become callable."
	CallDescription = "Call a tool of the catalog by name, one that search_tools found or that you know, " +
		"with its arguments as a JSON object."
)

// Languages are those the tools of s are written in, when s knows them
// (*toolsearch.Index does), most used first.
func Languages(s Searcher) []string {
	if l, ok := s.(interface{ Languages() []string }); ok {
		return l.Languages()
	}
	return nil
}

// LanguagesWithin are Languages of the tools of s that usable keeps (nil:
// every one), when s knows them: none are named when s cannot tell,
// rather than those of tools the caller may not use.
func LanguagesWithin(s Searcher, usable *toolsearch.Filter) ([]string, error) {
	if l, ok := s.(interface {
		LanguagesWithin(*toolsearch.Filter) ([]string, error)
	}); ok {
		return l.LanguagesWithin(usable)
	}
	if usable == nil {
		return Languages(s), nil
	}
	return nil, nil
}

// SearchDescriptionFor is SearchDescription naming the languages the
// catalog's tools are written in: a keyword search matches words, so a
// model asked in Chinese must search an English catalog in English; and
// the sources that hold them (SourcesNote).
func SearchDescriptionFor(langs []string, sources ...toolsearch.SourceInfo) string {
	d := SearchDescription
	if len(langs) > 0 {
		d += " The tools are described in " + list(langs) + ": write the query in " + pronoun(langs) +
			", translating the task if it is in another language."
	}
	return d + SourcesNote(sources)
}

// Sources are the sources of the tools s holds, when s knows them
// (*toolsearch.Index does): an index of the tools a user may use names
// that user's sources only.
func Sources(s Searcher) []toolsearch.SourceInfo {
	if l, ok := s.(interface {
		Sources() []toolsearch.SourceInfo
	}); ok {
		return l.Sources()
	}
	return nil
}

// Bounds of the sources search_tools names: a catalog of many sources
// must not fill the model's context with their list.
const (
	maxSourcesNamed = 20
	maxSourceLine   = 80
)

// SourcesNote names the sources that hold the tools, those with the most
// tools first, each in one line of its name and title, at most
// maxSourcesNamed of them (issue 49): a query naming one finds its tools
// first. "" when there are none.
func SourcesNote(sources []toolsearch.SourceInfo) string {
	sources = slices.Clone(sources)
	sources = slices.DeleteFunc(sources, func(s toolsearch.SourceInfo) bool { return s.Name == "" && s.Title == "" })
	if len(sources) == 0 {
		return ""
	}
	slices.SortStableFunc(sources, func(a, b toolsearch.SourceInfo) int { return b.Tools - a.Tools })
	var b strings.Builder
	b.WriteString(" The tools come from these sources; name one in the query to search its tools first:")
	for i, s := range sources {
		if i == maxSourcesNamed {
			fmt.Fprintf(&b, "\n- and %d more", len(sources)-i)
			break
		}
		line := s.Name
		switch {
		case line == "":
			line = s.Title
		case s.Title != "" && !strings.EqualFold(s.Title, s.Name):
			line += ": " + s.Title
		}
		if r := []rune(line); len(r) > maxSourceLine {
			line = string(r[:maxSourceLine-1]) + "…"
		}
		fmt.Fprintf(&b, "\n- %s (%d tools)", line, s.Tools)
	}
	return b.String()
}

// NoMatchNote is the note of a search that found nothing: what to try.
func NoMatchNote(langs []string) string {
	note := "No tool matches: no tool's text has these words."
	if len(langs) > 0 {
		note += " The tools are described in " + list(langs) + "; search again in " + pronoun(langs) + ","
	} else {
		note += " Search again"
	}
	return note + " with other words (the action and the object: \"create issue\", \"list members of a team\")."
}

// list joins languages: "English", "English and Chinese", "English, Chinese and Korean".
func list(langs []string) string {
	if len(langs) == 1 {
		return langs[0]
	}
	return strings.Join(langs[:len(langs)-1], ", ") + " and " + langs[len(langs)-1]
}

func pronoun(langs []string) string {
	if len(langs) == 1 {
		return langs[0]
	}
	return "one of those languages"
}

// Parameters of the meta-tools, JSON Schema.
var (
	SearchParameters = json.RawMessage(`{"type":"object","properties":{` +
		`"query":{"type":"string","description":"What the tool should do, in a few words."},` +
		`"limit":{"type":"integer","minimum":1,"maximum":` + strconv.Itoa(MaxLimit) + `,"description":"How many tools at most (default ` + strconv.Itoa(DefaultLimit) + `)."}},` +
		`"required":["query"]}`)
	CallParameters = json.RawMessage(`{"type":"object","properties":{` +
		`"name":{"type":"string","description":"The tool's name."},` +
		`"arguments":{"type":"object","description":"The tool's arguments."}},` +
		`"required":["name"]}`)
)

// Match is one tool a search found, as the client reads it.
type Match struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Parameters  []string `json:"parameters"`
}

// maxLine bounds a match's description, in characters.
const maxLine = 160

// Describe is p as a search shows it: a one-line description and the
// names of the parameters the client fills (fixed ones left out).
func Describe(p *plugins.Plugin, fixed map[string]any) Match {
	m := Match{Name: p.Name, Description: oneLine(p.Title, p.Description), Parameters: []string{}}
	gjson.GetBytes(p.Parameters, "properties").ForEach(func(k, _ gjson.Result) bool {
		name := k.String()
		_, a := p.FixedParams[name]
		_, b := fixed[name]
		if !a && !b {
			m.Parameters = append(m.Parameters, name)
		}
		return true
	})
	return m
}

// oneLine is the title, else the description's first line, cut to
// maxLine characters.
func oneLine(title, desc string) string {
	s := strings.TrimSpace(title)
	if s == "" {
		s = strings.TrimSpace(desc)
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = strings.TrimSpace(s[:i])
		}
	}
	if utf8.RuneCountInString(s) > maxLine {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:maxLine-1])) + "…"
	}
	return s
}

// Working is the set of tools a client has loaded through its searches:
// at most its capacity, the least recently used dropped first. Names keeps
// the order tools were loaded in, so that the tool list a model sees (and
// a provider's prompt cache) changes only at its end. It is not safe for
// concurrent use.
type Working struct {
	capacity int
	names    []string       // in load order
	used     map[string]int // name: tick of last use
	tick     int
}

// NewWorking returns an empty working set of the given capacity.
func NewWorking(capacity int) *Working {
	return &Working{capacity: max(capacity, 0), used: map[string]int{}}
}

// Use marks names as just used, loading those not loaded and dropping
// the least recently used beyond capacity; it returns what it loaded and
// what it dropped. Of more names than the capacity, the first are kept.
func (w *Working) Use(names ...string) (loaded, dropped []string) {
	if len(names) > w.capacity {
		names = names[:w.capacity]
	}
	// Ticks descend over names, so that the first name counts as the most
	// recent: a search's best match is the last to go.
	w.tick += len(names)
	for i, n := range names {
		if _, ok := w.used[n]; !ok {
			w.names = append(w.names, n)
			loaded = append(loaded, n)
		}
		w.used[n] = w.tick - i
	}
	for len(w.names) > w.capacity {
		oldest := 0
		for i, n := range w.names {
			if w.used[n] < w.used[w.names[oldest]] {
				oldest = i
			}
		}
		n := w.names[oldest]
		w.names = append(w.names[:oldest], w.names[oldest+1:]...)
		delete(w.used, n)
		dropped = append(dropped, n)
	}
	return loaded, dropped
}

// Cap is the most tools the set holds.
func (w *Working) Cap() int { return w.capacity }

// Has reports whether name is loaded.
func (w *Working) Has(name string) bool {
	_, ok := w.used[name]
	return ok
}

// Names are the loaded tools, in the order they were loaded.
func (w *Working) Names() []string { return w.names }
