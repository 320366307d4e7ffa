package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// The benchmarks give allocations and profiles of the two API paths a
// client calls (issue 19, point 5), beside a bare net/http relay making
// the same upstream call; speed itself is the runner's
// (`go run ./bench -only gateway`):
//
//	go test -run '^$' -bench . -benchmem ./api/
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	st := testdb.Open(b, store.DialectSQLite)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if q := r.URL.Query().Get("q"); q == "big" {
			w.Write(bigAnswer)
		} else {
			io.WriteString(w, `{"company":"ACME","q":"`+q+`"}`)
		}
	}))
	b.Cleanup(up.Close)
	e := newEnv(b, st, func(s *api.Server) { s.MCP = &api.MCPConfig{} })
	plugin := `{"name":"lookup","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},
	"execution":{"method":"GET","base_url":"` + up.URL + `","param_placement":"query"},
	"auth_config":{"type":"api_key","mapping":[{"source":"API_KEY","target":"X-Api-Key","location":"header"}]}}`
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		b.Fatalf("add plugin: %d %v", code, body)
	}
	if err := e.creds.Set(ctx, 7, "API_KEY", "sk-bench-0123456789", "bench"); err != nil {
		b.Fatal(err)
	}
	token, _, err := api.IssueToken(ctx, st, 7, "bench", 0, "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.changes.Poll(ctx); err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: bearerToken(token)}

	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Arguments struct {
				Q string `json:"q"`
			} `json:"arguments"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), "GET", up.URL+"?q="+in.Arguments.Q, nil)
		req.Header.Set("X-Api-Key", "sk-bench-0123456789")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	}))
	b.Cleanup(relay.Close)

	post := func(b *testing.B, url string, body []byte) {
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), "ACME") {
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
	}
	// A small answer, and one of the size APIs answer lists with (16 kB,
	// indented): what a call copies grows with the second.
	for _, a := range []struct{ suffix, q string }{{"", "acme"}, {"-16kB", "big"}} {
		body := []byte(`{"name":"lookup","arguments":{"q":"` + a.q + `"}}`)
		b.Run("bare-relay"+a.suffix, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				post(b, relay.URL, body)
			}
		})
		b.Run("execute"+a.suffix, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				post(b, e.url+"/v1/execute", body)
			}
		})
	}
	b.Run("mcp", func(b *testing.B) {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: client, DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		params := &sdk.CallToolParams{Name: "lookup", Arguments: map[string]any{"q": "acme"}}
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
}

// bigAnswer is a 16 kB list answer, indented as many APIs send it.
var bigAnswer = func() []byte {
	type item struct {
		ID      int    `json:"id"`
		Company string `json:"company"`
		Address string `json:"address"`
		Status  string `json:"status"`
	}
	var items []item
	for i := 0; len(items) < 120; i++ {
		items = append(items, item{ID: i, Company: "ACME 字节跳动 " + strconv.Itoa(i), Address: "1 Example Road, Haidian, Beijing", Status: "active"})
	}
	b, err := json.MarshalIndent(map[string]any{"items": items, "total": len(items)}, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}()
