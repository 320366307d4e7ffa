package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
)

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
	for _, n := range names {
		doc := fmt.Sprintf(`{"name":%q,"description":"%s.","parameters":{"type":"object","properties":{"id":{"type":"string"}}},
			"execution":{"method":"POST","base_url":%q}}`, n, strings.ReplaceAll(n, "_", " "), up.URL+"/"+n)
		if code, body := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
			t.Fatalf("add %s: %d %v", n, code, body)
		}
	}
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
	mreq, _ := http.NewRequest("GET", e.url+"/metrics", nil)
	mreq.Header.Set("Authorization", "Bearer "+adminToken)
	mresp, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(metrics), `blindexec_tool_searches_total{result="found"} 1`) {
		t.Errorf("the run's search is not in the catalog's metrics:\n%s", grepLines(string(metrics), "tool_searches"))
	}
}
