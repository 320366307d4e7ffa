package mcpserver

import (
	"fmt"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
)

// toolSet is the catalog's tools at one version, shared by every session.
type toolSet struct {
	version int64
	byName  map[string]*entry
	all     []*sdk.Tool // every tool, in name order: the list when not searching
	// search is set when the tools outnumber the threshold: tools/list
	// then answers the meta-tools, the pinned tools and a session's finds.
	search bool
	index  toolset.Searcher
	langs  []string // the index's tools are written in
	// searchTool is search_tools, its description naming those languages:
	// a view's names those of the tools its subject may use.
	searchTool *sdk.Tool
	pinned     []*sdk.Tool
	capacity   int // of a session's found tools
	// views are what each subject's sessions are shown of it (view.go).
	views views
}

// entry is one catalog tool.
type entry struct {
	plugin *plugins.Plugin
	tool   *sdk.Tool
}

// call_tool; search_tools is each tool set's (searchTool).
var (
	callTool = &sdk.Tool{Name: plugins.CallToolName, Title: "Call a tool", Description: toolset.CallDescription, InputSchema: toolset.CallParameters}
)

func searchTool(langs []string) *sdk.Tool {
	return &sdk.Tool{Name: plugins.SearchToolsName, Title: "Search tools", Description: toolset.SearchDescriptionFor(langs), InputSchema: toolset.SearchParameters}
}

// build converts the enabled plugins into the shared tool set of version.
func (s *Service) build(version int64, ps []*plugins.Plugin) (*toolSet, error) {
	start := time.Now()
	set := &toolSet{version: version, byName: make(map[string]*entry, len(ps))}
	var indexed []*plugins.Plugin
	for _, p := range ps {
		if !p.Enabled() {
			continue
		}
		if plugins.Reserved(p.Name) { // written around the API, by SQL
			s.log.Warn("plugin left out of the MCP catalog: its name is reserved for a meta-tool", "plugin", p.Name)
			continue
		}
		params := p.WrittenParameters() // an MCP tool's schema as its server wrote it
		if gjson.GetBytes(params, "type").String() != "object" {
			s.log.Warn("plugin left out of the MCP catalog: parameters are not an object schema", "plugin", p.Name)
			continue
		}
		t := &sdk.Tool{Name: p.Name, Title: p.Title, Description: p.Tool(nil).Function.Description, InputSchema: params,
			Annotations: annotations(p)}
		if out := p.Execution.OutputSchema; len(out) > 0 {
			t.OutputSchema = out // an MCP tool's, its structured content relayed whole
		}
		set.byName[p.Name] = &entry{plugin: p, tool: t}
		set.all = append(set.all, t)
		indexed = append(indexed, p)
	}
	// In name order whatever order the catalog gave (it gives its own
	// name order): a client comparing lists, or caching by them, sees
	// one order on every replica and every request.
	slices.SortFunc(set.all, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	cfg := s.opts.Search
	set.search = cfg.Search("", len(set.all))
	if set.search {
		for _, name := range cfg.Pinned {
			if e := set.byName[name]; e != nil {
				set.pinned = append(set.pinned, e.tool)
			} else {
				s.log.Warn("pinned tool not in the MCP catalog", "tool", name)
			}
		}
		set.capacity = max(cfg.Limit()-len(set.pinned), 0)
		ix, err := s.opts.NewIndex(indexed)
		if err != nil {
			return nil, fmt.Errorf("build the tool search index: %w", err)
		}
		set.index = ix
		set.langs = toolset.Languages(ix)
		set.searchTool = searchTool(set.langs)
	}
	s.log.Info("MCP tool set built", "version", version, "tools", len(set.all), "tool_search", set.search, "took", time.Since(start))
	return set, nil
}

// annotations describe a plugin in MCP's terms, so that a client which
// asks its user before changing things can: read-only when not
// consequential, destructive when consequential (the engine cannot tell a
// create from a delete, so it assumes the worse), idempotent for the
// methods HTTP calls so (an MCP tool when read-only), and open-world
// always — every call reaches a system outside the engine.
func annotations(p *plugins.Plugin) *sdk.ToolAnnotations {
	c := p.IsConsequential()
	idem := !c
	if p.ExecType() == plugins.TypeHTTP {
		idem = plugins.IdempotentMethod(p.Execution.Method)
	}
	open := true
	return &sdk.ToolAnnotations{ReadOnlyHint: !c, DestructiveHint: &c, IdempotentHint: idem, OpenWorldHint: &open}
}
