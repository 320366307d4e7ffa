package api

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// TestDynamicToolsRanked: GET /v1/tools?format=dynamic with q and limit
// answers the best matches of the catalog, best first.
func TestDynamicToolsRanked(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	ctx := context.Background()
	for _, p := range []*plugins.Plugin{
		{Name: "weather_now", Title: "Current weather", Description: "Weather of a city now."},
		{Name: "weather_forecast", Title: "Weather forecast", Description: "The weather of a city in the coming days."},
		{Name: "stock_quote", Title: "Stock quote", Description: "The price of a share."},
	} {
		p.Parameters = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)
		p.Execution = plugins.Execution{Method: "GET", BaseURL: "https://api.example.com/" + p.Name}
		row, _ := catalog.RowFromPlugin(p)
		if err := e.st.CreatePlugin(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	code, out := e.do("GET", "/v1/tools?format=dynamic&q=will+it+rain+in+the+coming+days&limit=1", e.userTok, nil)
	if code != 200 {
		t.Fatalf("dynamic tools: %d %v", code, out)
	}
	tools, _ := out["_dynamic_tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "weather_forecast" {
		t.Fatalf("_dynamic_tools = %v, want weather_forecast alone", tools)
	}
	code, out = e.do("GET", "/v1/tools?format=dynamic&q=weather&names=weather_now,stock_quote", e.userTok, nil)
	if tools, _ := out["_dynamic_tools"].([]any); code != 200 || len(tools) != 1 || tools[0].(map[string]any)["name"] != "weather_now" {
		t.Fatalf("q within names: %d %v", code, out)
	}
	if code, _ := e.do("GET", "/v1/tools?format=dynamic&q=weather&limit=-1", e.userTok, nil); code != 400 {
		t.Fatalf("a negative limit: %d, want 400", code)
	}
}

// TestToolIndexRebuiltOnChange: when the plugins' counter moves, the
// index is rebuilt before any search asks for it.
func TestToolIndexRebuiltOnChange(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	ctx := context.Background()
	changes := store.NewWatcher(st, time.Hour, nil)
	s := &Server{Store: st, Changes: changes}
	s.Handler()
	changes.Poll(ctx)
	row, _ := catalog.RowFromPlugin(&plugins.Plugin{Name: "weather_now", Description: "Weather now.",
		Parameters: json.RawMessage(`{"type":"object"}`), Execution: plugins.Execution{Method: "GET", BaseURL: "https://api.example.com"}})
	if err := st.CreatePlugin(ctx, row); err != nil {
		t.Fatal(err)
	}
	v, err := changes.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; s.tools.live.Version() != v.Plugins; i++ {
		if i == 500 {
			t.Fatalf("index at version %d, counter at %d: not rebuilt", s.tools.live.Version(), v.Plugins)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rs := s.tools.live.Current().Search("weather", 5); len(rs) != 1 {
		t.Fatalf("the rebuilt index finds %v", rs)
	}
}
