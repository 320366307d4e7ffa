package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// pagedNames are the names of a GET /v1/plugins answer.
func pagedNames(out map[string]any) []string {
	var names []string
	for _, p := range out["plugins"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	return names
}

// TestPluginsPagedAndFiltered (issue 39): GET /v1/plugins pages with
// limit and offset and says the total; filters by status, source (an
// import's id, or "none") and type; with q, ranks the enabled matches
// by tool search and pages them the same way; without limit it answers
// the whole catalog in its old shape. Bad parameters are 400s naming the
// parameter.
func TestPluginsPagedAndFiltered(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st)
		var paths strings.Builder
		for i := range 7 {
			fmt.Fprintf(&paths, "  /widgets/w%d:\n    get: {operationId: widget%d, summary: List widgets of kind %d, responses: {'200': {description: ok}}}\n", i, i, i)
		}
		code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"document": "openapi: 3.0.3\n" +
			"info: {title: Widgets, version: '1'}\nservers: [{url: 'https://widgets.example'}]\npaths:\n" + paths.String()})
		if code != http.StatusOK {
			t.Fatalf("import: %d %v", code, res)
		}
		src := int64(res["source_id"].(float64))
		for _, doc := range []string{
			tool("hand_gadget", "Gadget", "Lists widgets and gadgets by hand.", ""),
			tool("hand_off", "Off", "Lists widgets, disabled.", `"status": "1",`),
		} {
			if code, out := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
				t.Fatalf("create: %d %v", code, out)
			}
		}
		// An MCP plugin (written to the store: its server is not the point).
		if err := st.CreatePlugin(ctx, &store.Plugin{Name: "mcp_widgets", Description: "Lists widgets over MCP",
			ParameterSchema: store.JSON(`{"type":"object"}`), Status: store.StatusEnabled,
			ExecutionConfig: store.JSON(`{"execution":{"type":"mcp","mcp_id":"med","tool_name":"list"},"auth_config":{"type":"none"}}`)}); err != nil {
			t.Fatal(err)
		}
		e.changes.Poll(ctx)
		called := time.Date(2026, 11, 26, 9, 30, 0, 0, time.UTC)
		if err := st.InsertExecutions(ctx, []store.Execution{{PluginName: "hand_gadget", Status: store.ExecOK, CreateTime: called}}); err != nil {
			t.Fatal(err)
		}

		get := func(query string) map[string]any {
			t.Helper()
			code, out := e.do("GET", "/v1/plugins"+query, serviceToken, nil)
			if code != http.StatusOK {
				t.Fatalf("GET /v1/plugins%s: %d %v", query, code, out)
			}
			return out
		}
		all := get("")
		if n := len(all["plugins"].([]any)); n != 10 || all["total"] != 10.0 || all["limit"] != nil {
			t.Fatalf("the unpaged catalog: %d plugins, total %v, limit %v", n, all["total"], all["limit"])
		}
		for _, p := range all["plugins"].([]any) {
			if _, ok := p.(map[string]any)["source_id"]; ok {
				t.Fatalf("the unpaged catalog changed shape: %v", p)
			}
		}
		widgets := []string{"widget0", "widget1", "widget2", "widget3", "widget4", "widget5", "widget6"}
		for _, c := range []struct {
			query string
			want  []string
			total float64
		}{
			{"?limit=3", []string{"hand_gadget", "hand_off", "mcp_widgets"}, 10},
			{"?limit=3&offset=3", widgets[:3], 10},
			{"?limit=3&offset=9", widgets[6:], 10},
			{"?limit=50&source=" + fmt.Sprint(src), widgets, 7},
			{"?limit=2&source=" + fmt.Sprint(src) + "&offset=6", widgets[6:], 7},
			{"?limit=50&source=none", []string{"hand_gadget", "hand_off", "mcp_widgets"}, 3},
			{"?limit=50&type=mcp", []string{"mcp_widgets"}, 1},
			{"?limit=50&type=http&source=none", []string{"hand_gadget", "hand_off"}, 2},
			{"?limit=50&status=1", []string{"hand_off"}, 1},
			// With q: the enabled matches, best first, filtered, paged.
			{"?limit=50&q=gadget", []string{"hand_gadget"}, 1},
			{"?limit=50&q=widgets&type=mcp", []string{"mcp_widgets"}, 1},
			{"?limit=50&q=widgets&status=1", nil, 0},
			// By the effective consequential class (issue 33): MCP tools
			// are, GETs are not, until an administrator says otherwise.
			{"?limit=50&consequential=true", []string{"mcp_widgets"}, 1},
			{"?limit=50&consequential=false&source=none", []string{"hand_gadget", "hand_off"}, 2},
			{"?limit=2&consequential=false&offset=8", widgets[6:], 9},
			{"?limit=50&q=widgets&consequential=true", []string{"mcp_widgets"}, 1},
		} {
			out := get(c.query)
			if got := pagedNames(out); !slices.Equal(got, c.want) || out["total"] != c.total {
				t.Errorf("%s: %v of %v, want %v of %v", c.query, got, out["total"], c.want, c.total)
			}
		}
		// An administrator's setting moves a plugin to the other class.
		if code, out := e.do("POST", "/v1/plugins/consequential", adminToken, map[string]any{"names": []string{"widget0"}, "consequential": true}); code != http.StatusOK {
			t.Fatalf("mark widget0 consequential: %d %v", code, out)
		}
		if out := get("?limit=50&consequential=true"); !slices.Equal(pagedNames(out), []string{"mcp_widgets", "widget0"}) || out["total"] != 2.0 {
			t.Errorf("consequential after the setting: %v of %v", pagedNames(out), out["total"])
		}
		// The ranked pages are slices of one ranking.
		ranked := pagedNames(get("?limit=50&q=list+widgets"))
		if len(ranked) != 9 { // every enabled plugin but the disabled one
			t.Fatalf("q=list widgets ranks %v", ranked)
		}
		var paged []string
		for off := 0; off < 9; off += 4 {
			out := get(fmt.Sprintf("?limit=4&offset=%d&q=list+widgets", off))
			if out["total"] != 9.0 {
				t.Errorf("offset %d: total %v", off, out["total"])
			}
			paged = append(paged, pagedNames(out)...)
		}
		if !slices.Equal(paged, ranked) {
			t.Errorf("the pages of q=list widgets are %v, the ranking %v", paged, ranked)
		}
		// A page carries each plugin's source and last call.
		for _, p := range get("?limit=50")["plugins"].([]any) {
			m := p.(map[string]any)
			switch {
			case strings.HasPrefix(m["name"].(string), "widget") && m["source_id"] != float64(src):
				t.Errorf("%s: source_id %v, want %d", m["name"], m["source_id"], src)
			case m["name"] == "hand_gadget" && m["last_call_time"] != called.Format(time.RFC3339):
				t.Errorf("hand_gadget: last_call_time %v, want %s", m["last_call_time"], called.Format(time.RFC3339))
			case m["name"] != "hand_gadget" && m["last_call_time"] != nil:
				t.Errorf("%s was never called: last_call_time %v", m["name"], m["last_call_time"])
			}
		}
		code, out := e.do("GET", "/v1/sources", serviceToken, nil)
		if srcs, _ := out["sources"].([]any); code != http.StatusOK || len(srcs) != 1 ||
			srcs[0].(map[string]any)["plugins"] != 7.0 || srcs[0].(map[string]any)["location"] != "inline:Widgets" {
			t.Errorf("GET /v1/sources: %d %v", code, out)
		}

		for query, field := range map[string]string{
			"?limit=0": "limit", "?limit=501": "limit", "?limit=x": "limit", "?offset=-1": "offset",
			"?status=2": "status", "?type=grpc": "type", "?source=abc": "source", "?source=0": "source",
			"?consequential=maybe": "consequential",
		} {
			code, out := e.do("GET", "/v1/plugins"+query, serviceToken, nil)
			msg, _ := out["error"].(map[string]any)["message"].(string)
			if code != http.StatusBadRequest || !strings.HasPrefix(msg, field+": ") {
				t.Errorf("GET /v1/plugins%s: %d %q, want 400 naming %s", query, code, msg, field)
			}
		}
	})
}

// TestToolSearchPaged (issue 39): GET /v1/tools/search pages with offset
// and says the total; the pages are slices of one ranking.
func TestToolSearchPaged(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	for i := range 12 {
		if code, out := e.do("POST", "/v1/plugins", adminToken, tool(fmt.Sprintf("widget_%02d", i), "List widgets",
			"Lists widgets"+strings.Repeat(" widgets", i%4), "")); code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, out)
		}
	}
	search := func(query string) ([]string, map[string]any) {
		t.Helper()
		return searchNames(t, e, adminToken, "widgets"+query)
	}
	all, out := search("&limit=50")
	if len(all) != 12 || out["total"] != 12.0 {
		t.Fatalf("all: %v, total %v", all, out["total"])
	}
	var paged []string
	for off := 0; off < 12; off += 5 {
		names, out := search(fmt.Sprintf("&limit=5&offset=%d", off))
		if out["total"] != 12.0 || out["offset"] != float64(off) {
			t.Errorf("offset %d: total %v, offset %v", off, out["total"], out["offset"])
		}
		paged = append(paged, names...)
	}
	if !slices.Equal(paged, all) {
		t.Errorf("the pages %v are not the ranking %v", paged, all)
	}
	if code, out := e.do("GET", "/v1/tools/search?q=widgets&offset=x", adminToken, nil); code != http.StatusBadRequest {
		t.Errorf("offset=x: %d %v", code, out)
	}

	// GET /v1/tools pages by name without q, whole as before without limit.
	for query, want := range map[string][]string{
		"":                     nil, // all 12
		"?limit=5&offset=10":   {"widget_10", "widget_11"},
		"?limit=2&offset=3":    {"widget_03", "widget_04"},
		"?limit=500&offset=11": {"widget_11"},
		"?offset=20":           {},
	} {
		code, out := e.do("GET", "/v1/tools"+query, adminToken, nil)
		var names []string
		for _, tl := range out["tools"].([]any) {
			names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
		}
		if code != http.StatusOK || out["total"] != 12.0 || (want == nil && len(names) != 12) || (want != nil && !slices.Equal(names, want) && len(want)+len(names) > 0) {
			t.Errorf("GET /v1/tools%s: %d %v of %v, want %v", query, code, names, out["total"], want)
		}
	}
	if code, out := e.do("GET", "/v1/tools?limit=2&offset=-1", adminToken, nil); code != http.StatusBadRequest {
		t.Errorf("GET /v1/tools?offset=-1: %d %v", code, out)
	}
}
