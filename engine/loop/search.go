package loop

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
)

// deferred is a run's tool search (deferred loading): the model is shown
// search_tools, the pinned tools and the tools its searches found, at most
// the threshold of them besides search_tools.
type deferred struct {
	index   toolset.Searcher
	sources []toolsearch.SourceInfo
	langs   []string    // the offered tools are written in
	tool    openai.Tool // search_tools
	pinned  []string
	working *toolset.Working
}

// searchTool is the meta-tool the model searches with, naming the
// languages the tools are written in and the sources that hold them.
func searchTool(langs []string, sources []toolsearch.SourceInfo) openai.Tool {
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name:        plugins.SearchToolsName,
		Description: toolset.SearchDescriptionFor(langs, sources...),
		Parameters:  toolset.SearchParameters,
	}}
}

// deferLoading sets tool search up over the enabled plugins: the index,
// and the pinned tools (those of options.pinned_tools, and the function
// options.tool_choice forces, which the first model call must show).
func (s *state) deferLoading(enabled []*plugins.Plugin) *RunError {
	pinned := slices.Clone(s.req.Options.PinnedTools)
	if name := forcedTool(s.req.Options.ToolChoice); name != "" && !slices.Contains(pinned, name) {
		pinned = append(pinned, name)
	}
	limit := s.r.ToolSearch.Limit()
	if len(pinned) >= limit {
		return &RunError{Code: CodeInvalidRequest, Message: fmt.Sprintf(
			"options.pinned_tools: %d tools pinned; tool search shows at most %d tools, so pin fewer", len(pinned), limit-1)}
	}
	newIndex := s.r.NewIndex
	if newIndex == nil {
		newIndex = func(ps []*plugins.Plugin) (toolset.Searcher, error) { return toolsearch.New(ps) }
	}
	start := time.Now()
	index, err := newIndex(enabled)
	if err != nil {
		return &RunError{Code: CodeInternal, Message: "the tool search index could not be built: " + err.Error()}
	}
	s.log.Debug("tool search index built", "tools", len(enabled), "took", time.Since(start))
	langs := toolset.Languages(index)
	s.search = &deferred{
		index:   index,
		sources: toolset.Sources(index),
		langs:   langs,
		tool:    searchTool(langs, toolset.Sources(index)),
		pinned:  pinned,
		working: toolset.NewWorking(limit - len(pinned)),
	}
	return nil
}

// usable keeps the tools offered at the model call: what a search finds
// and what search_tools names the languages of (nil: every tool of the
// run is offered).
func (s *state) usable() *toolsearch.Filter {
	if s.r.Offer == nil {
		return nil
	}
	return &toolsearch.Filter{Keep: func(ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
		return slices.DeleteFunc(slices.Clone(ps), func(p *plugins.Plugin) bool { return s.offered[p.Name] != p }), nil
	}}
}

// searchLanguages names in search_tools the languages of the tools
// offered now, not of those the run may no longer use.
func (s *state) searchLanguages() *RunError {
	d := s.search
	if d == nil {
		return nil
	}
	langs, err := toolset.LanguagesWithin(d.index, s.usable())
	if err != nil {
		return &RunError{Code: CodePermissionsUnavailable, Message: "the languages of the tools the run may use could not be told: " + err.Error()}
	}
	d.langs, d.tool = langs, searchTool(langs, d.sources)
	return nil
}

// visible are the tools of the next model call: those offered, or with
// tool search search_tools and the pinned and found tools offered.
func (s *state) visible() []openai.Tool {
	d := s.search
	var tools []openai.Tool
	if d == nil {
		for _, p := range s.enabled {
			if s.offered[p.Name] == p {
				tools = append(tools, s.tool(p))
			}
		}
		return tools
	}
	tools = []openai.Tool{d.tool}
	for _, names := range [][]string{d.pinned, d.working.Names()} {
		for _, name := range names {
			if p := s.offered[name]; p != nil {
				tools = append(tools, s.tool(p))
			}
		}
	}
	return tools
}

// isSearch reports whether a tool call is a search_tools call.
func (s *state) isSearch(name string) bool {
	return s.search != nil && name == plugins.SearchToolsName
}

// used loads a tool the model called without it being shown (one dropped
// earlier, or named from memory), so that later calls show it.
func (s *state) used(name string) {
	d := s.search
	if d == nil || s.offered[name] == nil || slices.Contains(d.pinned, name) {
		return
	}
	d.working.Use(name)
}

// searchOutcome is the content of a search_tools result.
type searchOutcome struct {
	Tools []toolset.Match `json:"tools"`
	Note  string          `json:"note"`
}

// searchCall runs a search_tools call: the matches are its result, and
// those not pinned join the model's tools from the next call on.
func (s *state) searchCall(st Step, args string) outcome {
	d := s.search
	start := time.Now()
	ev := &ToolSearch{Index: st.Index, Turn: st.Turn, ToolCallID: st.ToolCallID, Results: []SearchResult{}, Loaded: []string{}, Dropped: []string{}}
	a, err := toolset.ParseSearchArgs([]byte(args), s.r.ToolSearch.MaxQueryChars)
	if err != nil {
		status := StepRefused
		if !json.Valid([]byte(args)) {
			status = StepInvalidJSON
		}
		ev.Error = err.Error()
		out := failed(st, status, &engine.ToolError{Code: engine.CodeInvalidArguments, Message: err.Error()}, 0)
		out.search = ev
		return out
	}
	ev.Query, ev.Limit = a.Query, a.Limit
	res, err := toolset.Within(d.index, a.Query, min(a.Limit, d.working.Cap()), s.usable())
	if err != nil {
		s.log.Warn("tool search failed", "err", err)
	}
	body := searchOutcome{Tools: []toolset.Match{}}
	var load []string
	for _, r := range res {
		p := s.offered[r.Name]
		if p == nil { // an index that knows more than the run's tools
			continue
		}
		ev.Results = append(ev.Results, SearchResult{Name: r.Name, Title: r.Title, Score: r.Score})
		body.Tools = append(body.Tools, toolset.Describe(p, s.req.FixedParams[p.Name]))
		st.Found = append(st.Found, r.Name)
		if !slices.Contains(d.pinned, r.Name) {
			load = append(load, r.Name)
		}
	}
	loaded, dropped := d.working.Use(load...)
	ev.Loaded = append(ev.Loaded, loaded...)
	ev.Dropped = append(ev.Dropped, dropped...)
	if len(body.Tools) == 0 {
		body.Note = toolset.NoMatchNote(d.langs)
	} else {
		body.Note = "These tools are now available: call the one that fits with its parameters."
	}
	content, err := json.Marshal(body)
	if err != nil { // strings and string slices always marshal
		panic(err)
	}
	elapsed := time.Since(start)
	st.Status = StepOK
	st.LatencyMS = elapsed.Milliseconds()
	ev.LatencyMS = float64(elapsed.Microseconds()) / 1000
	s.log.Debug("tool search", "query", a.Query, "found", len(ev.Results), "loaded", len(loaded), "dropped", len(dropped))
	return outcome{step: st, content: string(content), search: ev}
}

// forcedTool is the function a tool_choice forces, or "".
func forcedTool(choice any) string {
	switch c := choice.(type) {
	case openai.ToolChoice:
		return c.Function.Name
	case *openai.ToolChoice:
		if c != nil {
			return c.Function.Name
		}
	case map[string]any:
		fn, _ := c["function"].(map[string]any)
		name, _ := fn["name"].(string)
		return name
	}
	return ""
}
