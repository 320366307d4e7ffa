package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/egress/egresstest"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
)

// addTools adds POST tools named names to the catalog, each calling
// up/<name>; their descriptions are their names' words.
func addTools(t *testing.T, e *env, up string, names ...string) {
	t.Helper()
	for _, n := range names {
		doc := fmt.Sprintf(`{"name":%q,"description":"%s.","parameters":{"type":"object","properties":{"id":{"type":"string"}}},
			"execution":{"method":"POST","base_url":%q}}`, n, strings.ReplaceAll(n, "_", " "), up+"/"+n)
		if code, body := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
			t.Fatalf("add %s: %d %v", n, code, body)
		}
	}
}

// searches is the count of tool searches in the metrics that found
// something.
func searches(t *testing.T, e *env) string {
	t.Helper()
	for _, l := range strings.Split(metricsText(t, e.url), "\n") {
		if v, ok := strings.CutPrefix(l, `blindexec_tool_searches_total{result="found"} `); ok {
			return v
		}
	}
	return "0"
}

// TestRunToolSearch: a streamed run bound by plugin_names to the whole
// catalog, past the threshold, searches the catalog's own index (the
// search is counted in the metrics), loads the tool it found, calls it,
// and streams the search as a tool.search event.
func TestRunToolSearch(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	})
	llm := openaitest.New(t)
	e := newEnv(t, st, withModel(llm), func(s *api.Server) { s.Runner.ToolSearch = toolset.Config{Threshold: 2} })
	names := []string{"invoice_create", "invoice_void", "customer_delete", "customer_list"}
	addTools(t, e, up.URL, names...)
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "s", Name: "search_tools", Arguments: `{"query":"void an invoice","limit":1}`}}},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c", Name: "invoice_void", Arguments: `{"id":"in_1"}`}}},
		openaitest.Turn{Content: "Voided."},
	)
	body, _ := json.Marshal(map[string]any{"user_id": 7, "messages": []map[string]string{{"role": "user", "content": "void invoice in_1"}},
		"plugin_names": names, "options": map[string]any{"stream": true}})
	req, _ := http.NewRequest("POST", e.url+"/v1/runs", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+serviceToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []string
	var search map[string]any
	var last map[string]any
	sc := bufio.NewScanner(resp.Body)
	var name string
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			name = n
			events = append(events, n)
		}
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var v map[string]any
			json.Unmarshal([]byte(d), &v)
			if name == "tool.search" {
				search = v
			}
			last = v
		}
	}
	if got := strings.Join(events, ","); got != "run.started,tool.search,tool.started,tool.completed,message.delta,run.completed" {
		t.Fatalf("events %s", got)
	}
	if fmt.Sprint(search["loaded"]) != "[invoice_void]" || search["query"] != "void an invoice" {
		t.Errorf("tool.search = %v", search)
	}
	if last["status"] != "completed" {
		t.Errorf("reply = %v", last)
	}
	var sent struct {
		Tools []struct{ Function struct{ Name string } }
	}
	json.Unmarshal(llm.Requests()[1], &sent)
	if len(sent.Tools) != 2 || sent.Tools[1].Function.Name != "invoice_void" {
		t.Errorf("second model call's tools = %+v", sent.Tools)
	}

	// The run searched the catalog's index, which counts its searches.
	if n := searches(t, e); n != "1" {
		t.Errorf("searches counted: %s, want 1", n)
	}
}

// TestMCPToolSearch: /mcp past its threshold lists the meta-tools, and
// its searches go to the catalog's index (counted in the metrics).
func TestMCPToolSearch(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	})
	e := newEnv(t, st, func(s *api.Server) {
		m := enginemcp.NewManager(st, egresstest.Client(t))
		t.Cleanup(func() { m.Close() })
		s.MCP = &api.MCPConfig{Manager: m, ToolSearch: toolset.Config{Threshold: 2}}
	})
	addTools(t, e, up.URL, "invoice_create", "invoice_void", "customer_delete")
	hc := &http.Client{Transport: headerRT{"Authorization": "Bearer " + serviceToken, "X-User-Id": "7"}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: hc}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a session keeps its finds
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	names := func() []string {
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range list.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{"search_tools", "call_tool"}) {
		t.Fatalf("tools = %v", got)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "void an invoice", "limit": 1}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "invoice_void") {
		t.Fatalf("search = %+v, %v", res, err)
	}
	if got := names(); !slices.Equal(got, []string{"search_tools", "call_tool", "invoice_void"}) {
		t.Errorf("tools after the search = %v", got)
	}
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "invoice_void", Arguments: map[string]any{"id": "in_1"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "/invoice_void") {
		t.Errorf("invoice_void = %+v, %v", res, err)
	}
	if n := searches(t, e); n != "1" {
		t.Errorf("searches counted: %s, want 1", n)
	}
}

type headerRT map[string]string

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}
