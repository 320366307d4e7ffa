package toolset

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/toolsearch"
)

func TestConfig(t *testing.T) {
	tests := []struct {
		cfg    Config
		mode   string // of the run; "" for the default
		n      int
		search bool
	}{
		{n: 40, search: false},
		{n: 41, search: true},
		{cfg: Config{Threshold: 3}, n: 4, search: true},
		{cfg: Config{Threshold: 3}, mode: "off", n: 1000, search: false},
		{cfg: Config{Mode: ModeAlways}, n: 1, search: true},
		{cfg: Config{Mode: ModeOff}, n: 1000, search: false},
		{cfg: Config{Mode: ModeOff}, mode: "AUTO", n: 41, search: true},
		{cfg: Config{Threshold: 500}, n: 121, search: true}, // within what a request may carry
	}
	for _, tt := range tests {
		mode, err := ParseMode(tt.mode)
		if err != nil {
			t.Fatal(err)
		}
		if got := tt.cfg.Search(mode, tt.n); got != tt.search {
			t.Errorf("%+v, mode %q, %d tools: search %v, want %v", tt.cfg, tt.mode, tt.n, got, tt.search)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil {
		t.Error("ParseMode accepted sometimes")
	}
	if got := Names(" a, ,b "); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Names = %q", got)
	}
}

func TestParseSearchArgs(t *testing.T) {
	tests := []struct {
		raw     string
		want    SearchArgs
		wantErr bool
	}{
		{`{"query":" open pull requests "}`, SearchArgs{Query: "open pull requests", Limit: DefaultLimit}, false},
		{`{"query":"x","limit":3}`, SearchArgs{Query: "x", Limit: 3}, false},
		{`{"query":"x","limit":500}`, SearchArgs{Query: "x", Limit: MaxLimit}, false},
		{`{"query":""}`, SearchArgs{}, true},
		{``, SearchArgs{}, true},
		{`{"query":`, SearchArgs{}, true},
		{`{"query":3}`, SearchArgs{}, true},
		// Issue 30: a query is bounded in characters, not bytes.
		{`{"query":"` + strings.Repeat("é", 18) + `"}`, SearchArgs{Query: strings.Repeat("é", 18), Limit: DefaultLimit}, false},
		{`{"query":"` + strings.Repeat("é", 19) + `"}`, SearchArgs{}, true},
	}
	for _, tt := range tests {
		got, err := ParseSearchArgs([]byte(tt.raw), 18)
		if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrArguments)) {
			t.Errorf("%s: error %v", tt.raw, err)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.raw, got, tt.want)
		}
	}
}

func TestParseCallArgs(t *testing.T) {
	tests := []struct {
		raw, name, args string
		wantErr         bool
	}{
		{`{"name":"f","arguments":{"a":1}}`, "f", `{"a":1}`, false},
		{`{"name":"f"}`, "f", `{}`, false},
		{`{"name":"f","arguments":null}`, "f", `{}`, false},
		{`{"name":"f","arguments":[1]}`, "", "", true},
		{`{"arguments":{}}`, "", "", true},
		{`nope`, "", "", true},
	}
	for _, tt := range tests {
		got, err := ParseCallArgs([]byte(tt.raw))
		if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrArguments)) {
			t.Errorf("%s: error %v", tt.raw, err)
			continue
		}
		if err == nil && (got.Name != tt.name || string(got.Arguments) != tt.args) {
			t.Errorf("%s: %+v", tt.raw, got)
		}
	}
}

func TestMetaToolParametersAreSchemas(t *testing.T) {
	for _, raw := range []json.RawMessage{SearchParameters, CallParameters} {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || m["type"] != "object" {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

func TestDescribe(t *testing.T) {
	p := &plugins.Plugin{Name: "pulls_list", Description: "List pull requests\n\nLists the pull requests of a repository, with filters.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"state":{"type":"string"},"per_page":{"type":"integer"}}}`),
		FixedParams: map[string]any{"per_page": 100}}
	got := Describe(p, map[string]any{"owner": "acme"})
	if got.Name != "pulls_list" || got.Description != "List pull requests" || !slices.Equal(got.Parameters, []string{"repo", "state"}) {
		t.Errorf("Describe = %+v", got)
	}
	p.Title = "List the pull requests"
	if got := Describe(p, nil); got.Description != p.Title || !slices.Equal(got.Parameters, []string{"owner", "repo", "state"}) {
		t.Errorf("with a title: %+v", got)
	}
	p.Title = strings.Repeat("长", 200)
	if got := Describe(p, nil); len([]rune(got.Description)) != maxLine || !strings.HasSuffix(got.Description, "…") {
		t.Errorf("a long title is not cut to %d characters: %d", maxLine, len([]rune(got.Description)))
	}
}

func TestWorking(t *testing.T) {
	w := NewWorking(3)
	step := func(names []string, loaded, dropped, now []string) {
		t.Helper()
		l, d := w.Use(names...)
		if !slices.Equal(l, loaded) || !slices.Equal(d, dropped) || !slices.Equal(w.Names(), now) {
			t.Errorf("Use(%v) = %v, %v; names %v; want %v, %v; %v", names, l, d, w.Names(), loaded, dropped, now)
		}
	}
	step([]string{"a", "b"}, []string{"a", "b"}, nil, []string{"a", "b"})
	step([]string{"c"}, []string{"c"}, nil, []string{"a", "b", "c"})
	step([]string{"a"}, nil, nil, []string{"a", "b", "c"}) // a used again: b is now the oldest
	step([]string{"d"}, []string{"d"}, []string{"b"}, []string{"a", "c", "d"})
	// Of two new names, the best (first) outlives the second.
	step([]string{"e", "f"}, []string{"e", "f"}, []string{"c", "a"}, []string{"d", "e", "f"})
	step([]string{"g", "h", "i", "j"}, []string{"g", "h", "i"}, []string{"d", "f", "e"}, []string{"g", "h", "i"})
	if !w.Has("g") || w.Has("j") {
		t.Errorf("Has: %v", w.Names())
	}
	if l, d := NewWorking(0).Use("a"); l != nil || d != nil {
		t.Errorf("capacity 0 loaded %v", l)
	}
}

func TestLanguageHints(t *testing.T) {
	if got := SearchDescriptionFor(nil); got != SearchDescription {
		t.Errorf("no languages: %q", got)
	}
	for _, tc := range []struct {
		langs             []string
		description, note string
	}{
		{[]string{"English"}, "The tools are described in English: write the query in English, translating", "described in English; search again in English,"},
		{[]string{"English", "Chinese"}, "The tools are described in English and Chinese: write the query in one of those languages", "described in English and Chinese; search again in one of those languages"},
		{[]string{"English", "Chinese", "Korean"}, "described in English, Chinese and Korean:", "English, Chinese and Korean;"},
	} {
		if got := SearchDescriptionFor(tc.langs); !strings.HasPrefix(got, SearchDescription) || !strings.Contains(got, tc.description) {
			t.Errorf("%v: description %q", tc.langs, got)
		}
		if got := NoMatchNote(tc.langs); !strings.Contains(got, tc.note) {
			t.Errorf("%v: note %q", tc.langs, got)
		}
	}
}

// TestSourcesNote: search_tools names the sources of the tools it
// searches, most tools first, each in one line, at most maxSourcesNamed
// of them (issue 49 point 1).
func TestSourcesNote(t *testing.T) {
	if got := SearchDescriptionFor([]string{"English"}); strings.Contains(got, "sources") {
		t.Errorf("no sources, yet named: %s", got)
	}
	d := SearchDescriptionFor([]string{"English"},
		toolsearch.SourceInfo{Name: "hetzner", Title: "Hetzner Cloud API", Tools: 144},
		toolsearch.SourceInfo{Name: "zoom", Title: "Zoom API", Tools: 373},
		toolsearch.SourceInfo{Tools: 3})
	if want := "\n- zoom: Zoom API (373 tools)\n- hetzner: Hetzner Cloud API (144 tools)"; !strings.HasSuffix(d, want) {
		t.Errorf("description %q does not end with %q", d, want)
	}
	var many []toolsearch.SourceInfo
	for i := range 30 {
		many = append(many, toolsearch.SourceInfo{Name: fmt.Sprintf("s%d", i), Title: strings.Repeat("long title ", 20), Tools: i})
	}
	note := SourcesNote(many)
	lines := strings.Split(note, "\n")
	if len(lines) != 1+maxSourcesNamed+1 || lines[len(lines)-1] != "- and 10 more" || !strings.HasPrefix(lines[1], "- s29: ") {
		t.Errorf("note of 30 sources:\n%s", note)
	}
	for _, l := range lines[1:] {
		if utf8.RuneCountInString(l) > maxSourceLine+20 {
			t.Errorf("line of %d characters: %q", utf8.RuneCountInString(l), l)
		}
	}
}

// firstOnly is a Searcher that cannot filter while it ranks.
type firstOnly struct{ ix *toolsearch.Index }

func (f firstOnly) Search(q string, limit int) []toolsearch.Result { return f.ix.Search(q, limit) }

// TestWithin: a page of a user's tools is full of them, from the index's
// filtered ranking, or from a plain Searcher's first MaxLimit filtered;
// no filter is the plain search; a filter's error is the search's.
func TestWithin(t *testing.T) {
	var ps []*plugins.Plugin
	for i := range 30 {
		ps = append(ps, &plugins.Plugin{Name: fmt.Sprintf("report_%02d", i), Description: "Exports a report" + strings.Repeat(" report", i%4)})
	}
	ix, err := toolsearch.New(ps)
	if err != nil {
		t.Fatal(err)
	}
	odd := &toolsearch.Filter{Keep: func(ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
		return slices.DeleteFunc(slices.Clone(ps), func(p *plugins.Plugin) bool { return p.Name[len(p.Name)-1]%2 == 0 }), nil
	}}
	all, _ := ix.Rank("report", 0)
	var want []string
	for _, r := range all {
		if r.Name[len(r.Name)-1]%2 == 1 && len(want) < 5 {
			want = append(want, r.Name)
		}
	}
	for _, tc := range []struct {
		name string
		s    Searcher
	}{{"index", ix}, {"plain searcher", firstOnly{ix}}} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := Within(tc.s, "report", 5, odd)
			var got []string
			for _, r := range rs {
				got = append(got, r.Name)
			}
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("Within = %v, %v; want %v", got, err, want)
			}
			if rs, err := Within(tc.s, "report", 5, nil); err != nil || len(rs) != 5 || rs[0].Name != all[0].Name {
				t.Errorf("Within with no filter is not the plain search: %d results, %v", len(rs), err)
			}
			refuse := errors.New("unreadable")
			if _, err := Within(tc.s, "report", 5, &toolsearch.Filter{Keep: func([]*plugins.Plugin) ([]*plugins.Plugin, error) { return nil, refuse }}); !errors.Is(err, refuse) {
				t.Errorf("a failing filter: %v", err)
			}
		})
	}
}
