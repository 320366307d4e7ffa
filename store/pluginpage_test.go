package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestListPluginsFilteredAndPaged: the catalog's filters (status, source,
// none, execution type, names) and pages, counted apart from the page, on
// both databases.
func TestListPluginsFilteredAndPaged(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		srv := &store.MCPServer{Name: "medical", URL: "http://127.0.0.1:9/mcp", Transport: "streamable_http"}
		if err := s.CreateMCPServer(ctx, srv); err != nil {
			t.Fatal(err)
		}
		gh := &store.ImportSource{Kind: store.SourceOpenAPI, Location: "GitHub"}
		med := &store.ImportSource{Kind: store.SourceMCP, Location: srv.ID}
		for _, src := range []*store.ImportSource{gh, med} {
			if err := s.CreateImportSource(ctx, src); err != nil {
				t.Fatal(err)
			}
		}
		add := func(name, status, cfg string, src *int64) {
			t.Helper()
			if err := s.CreatePlugin(ctx, &store.Plugin{Name: name, Status: status, SourceID: src,
				ExecutionConfig: store.JSON(cfg)}); err != nil {
				t.Fatal(err)
			}
		}
		const (
			http    = `{"execution":{"method":"GET","base_url":"http://x"}}`
			httpSet = `{"execution":{"type":"http","method":"GET"}}`
			mcp     = `{"execution":{"type":"mcp","mcp_id":"med","tool_name":"t"}}`
		)
		for i := range 5 {
			add(fmt.Sprintf("gh_%d", i), map[bool]string{true: "1", false: "0"}[i == 3], http, &gh.ID)
		}
		add("med_a", "0", mcp, &med.ID)
		add("med_b", "1", mcp, &med.ID)
		add("hand_http", "0", httpSet, nil)
		add("hand_mcp", "0", mcp, nil)
		add("no_config", "0", "", nil)

		for _, c := range []struct {
			name string
			f    store.PluginFilter
			want []string // the page
			all  int      // the count
		}{
			{"everything", store.PluginFilter{}, []string{"gh_0", "gh_1", "gh_2", "gh_3", "gh_4", "hand_http", "hand_mcp", "med_a", "med_b", "no_config"}, 10},
			{"first page", store.PluginFilter{Limit: 3}, []string{"gh_0", "gh_1", "gh_2"}, 10},
			{"second page", store.PluginFilter{Limit: 3, Offset: 3}, []string{"gh_3", "gh_4", "hand_http"}, 10},
			{"past the end", store.PluginFilter{Limit: 3, Offset: 30}, nil, 10},
			{"offset alone", store.PluginFilter{Offset: 8}, []string{"med_b", "no_config"}, 10},
			{"disabled", store.PluginFilter{Status: "1"}, []string{"gh_3", "med_b"}, 2},
			{"source", store.PluginFilter{SourceID: &gh.ID, Limit: 2, Offset: 2}, []string{"gh_2", "gh_3"}, 5},
			{"by hand", store.PluginFilter{NoSource: true}, []string{"hand_http", "hand_mcp", "no_config"}, 3},
			{"http (set, unset, no config)", store.PluginFilter{Type: "http", Offset: 5}, []string{"hand_http", "no_config"}, 7},
			{"mcp", store.PluginFilter{Type: "mcp"}, []string{"hand_mcp", "med_a", "med_b"}, 3},
			{"mcp by hand, enabled", store.PluginFilter{Type: "mcp", NoSource: true, Status: "0"}, []string{"hand_mcp"}, 1},
			{"mcp of the source", store.PluginFilter{Type: "mcp", SourceID: &med.ID, Status: "0"}, []string{"med_a"}, 1},
			{"names", store.PluginFilter{Names: []string{"med_b", "gh_1", "absent"}}, []string{"gh_1", "med_b"}, 2},
			{"no names", store.PluginFilter{Names: []string{}}, nil, 0},
		} {
			t.Run(c.name, func(t *testing.T) {
				ps, err := s.ListPlugins(ctx, c.f)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, p := range ps {
					got = append(got, p.Name)
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("ListPlugins = %v, want %v", got, c.want)
				}
				if n, err := s.CountPlugins(ctx, c.f); err != nil || n != c.all {
					t.Errorf("CountPlugins = %d, %v; want %d", n, err, c.all)
				}
				names, err := s.PluginNames(ctx, c.f)
				if err != nil || len(names) != c.all {
					t.Errorf("PluginNames = %v, %v; want %d names", names, err, c.all)
				}
			})
		}

		sources, err := s.ListImportSources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var counts []string
		for _, src := range sources {
			counts = append(counts, fmt.Sprintf("%s %q %d", src.Kind, src.ServerName, src.Plugins))
		}
		if want := []string{`mcp "medical" 2`, `openapi "" 5`}; !slices.Equal(counts, want) {
			t.Errorf("ListImportSources = %v, want %v", counts, want)
		}
	})
}

func TestLastCalls(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
		var es []store.Execution
		for i, name := range []string{"a", "b", "a", "c", "a", "other_249"} {
			es = append(es, store.Execution{PluginName: name, Status: store.ExecOK, CreateTime: base.Add(time.Duration(i) * time.Minute)})
		}
		if err := s.InsertExecutions(ctx, es); err != nil {
			t.Fatal(err)
		}
		// More names than one query takes.
		names := []string{"a", "b", "never"}
		for i := range 250 {
			names = append(names, fmt.Sprintf("other_%d", i))
		}
		got, err := s.LastCalls(ctx, names)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]time.Time{"a": base.Add(4 * time.Minute), "b": base.Add(time.Minute), "other_249": base.Add(5 * time.Minute)}
		if len(got) != len(want) {
			t.Fatalf("LastCalls = %v, want %v", got, want)
		}
		for k, v := range want {
			if !got[k].Equal(v) {
				t.Errorf("LastCalls[%s] = %v, want %v", k, got[k], v)
			}
		}
	})
}
