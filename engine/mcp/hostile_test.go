package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/plugins/mcpimport"
	"github.com/blindexec/blindexec/store"
)

// TestUpstreamMessageBounded: an MCP server answering a call with a JSON
// body without end is read up to the manager's cap, not into memory
// whole (the MCP SDK reads a JSON answer with io.ReadAll): the call fails
// naming the limit, long before the flood ends, and the next call works.
func TestUpstreamMessageBounded(t *testing.T) {
	up := mcptest.New(t)
	target, _ := url.Parse(up.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	const flood = 64 << 20
	var written atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if !bytes.Contains(body, []byte(`"tools/call"`)) || !bytes.Contains(body, []byte(`"flood"`)) || json.Unmarshal(body, &msg) != nil {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		n, _ := io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"content":[{"type":"text","text":"`)
		written.Add(int64(n))
		chunk := strings.Repeat("A", 64<<10)
		for written.Load() < flood {
			n, err := io.WriteString(w, chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		<-r.Context().Done() // never ends the body
	}))
	t.Cleanup(func() { front.CloseClientConnections(); front.Close() })
	row := httpServer(up)
	row.URL = front.URL + "/mcp"
	ex, m := setup(t, row)
	m.MaxMessageBytes = 1 << 20

	p := mcpPlugin("echo", nil)
	p.Execution.TimeoutMS = 3000
	res, err := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{"text":"flood"}`), Credentials: tokenA})
	if err != nil || res.OK || res.Error == nil || !strings.Contains(res.Error.Message, "1048576 bytes") {
		t.Errorf("a flooding answer: %+v, %v; want an error naming the limit", res.Error, err)
	}
	if w := written.Load(); w >= flood {
		t.Errorf("the engine read %d bytes of the flood, want it stopped near 1 MiB", w)
	}
	res, err = ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{"text":"calm"}`), Credentials: tokenA})
	if err != nil || !res.OK {
		t.Errorf("the next call: %+v (%v), %v", res, res.Error, err)
	}
}

// TestToolsListBounded: a server whose tools/list pages never end (a
// next cursor always) is read up to the manager's bound on the whole
// list, not until memory or the timeout runs out: with tools on each page
// the listing fails naming the byte limit and its setting; with empty
// pages, naming the pages' limit; with pages padded by a field the engine
// ignores, naming the bound on the answers as read (twice the list's and
// one answer's).
// Nothing is cached either way.
func TestToolsListBounded(t *testing.T) {
	desc := strings.Repeat("d", 4<<10)
	for _, tc := range []struct {
		name      string
		perPage   int
		pad       int
		maxPages  int64
		wantError func(error) bool
	}{
		// 16 tools of some 4 kB a page: the bound is passed on the 17th page.
		{"tools on every page", 16, 0, 20, func(err error) bool {
			var tl *mcpimport.TooLargeError
			return errors.As(err, &tl) && tl.Listed && tl.Max == 1<<20 && strings.Contains(err.Error(), "1 MiB (BLINDEXEC_IMPORT_MAX_MB)")
		}},
		{"empty pages", 0, 0, 1000, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "more than 1000 pages")
		}},
		// 12 MiB of answers read in all (twice the list's 1 MiB and one
		// answer's 10): the 25th page of 512 kB passes it.
		{"padded pages", 0, 512 << 10, 26, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "answers to one listing are larger than 12582912 bytes")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pages atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&msg) != nil {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				var result any
				switch msg.Method {
				case "initialize":
					result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
						"serverInfo": map[string]any{"name": "endless", "version": "1"}}
				case "tools/list":
					n := pages.Add(1)
					tools := make([]any, tc.perPage)
					for i := range tools {
						tools[i] = map[string]any{"name": fmt.Sprintf("t%d_%d", n, i), "description": desc,
							"inputSchema": map[string]any{"type": "object"}}
					}
					result = map[string]any{"tools": tools, "nextCursor": fmt.Sprint(n), "padding": strings.Repeat("p", tc.pad)}
				default:
					if len(msg.ID) > 0 { // a request this server does not know
						w.Header().Set("Content-Type", "application/json")
						_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
							"error": map[string]any{"code": -32601, "message": "method not found"}})
						return
					}
					w.WriteHeader(http.StatusAccepted) // a notification
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
			}))
			t.Cleanup(srv.Close)
			row := store.MCPServer{ID: "srv-1", Name: "endless", Transport: store.TransportStreamableHTTP, URL: srv.URL}
			_, m := setup(t, row)
			m.MaxToolsBytes = 1 << 20

			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			tools, err := m.Tools(ctx, "srv-1", nil, true)
			if !tc.wantError(err) {
				t.Fatalf("Tools = %d tools, %v; want the listing stopped at its bound", len(tools), err)
			}
			if n := pages.Load(); n > tc.maxPages {
				t.Errorf("%d pages read, want at most %d", n, tc.maxPages)
			}
		})
	}
}

// TestToolsCacheBounded: the tool lists cached per credential set hold at
// most MaxToolsBytes together: a server listing near the limit to each of
// many users was held once a user. Past it the oldest list is dropped (and
// listed afresh when asked again); within it each is kept.
func TestToolsCacheBounded(t *testing.T) {
	up := mcptest.New(t)
	_, m := setup(t, httpServer(up))
	ctx := context.Background()
	tools, err := m.Tools(ctx, "srv-1", tokenA, false)
	if err != nil {
		t.Fatal(err)
	}
	one, _ := json.Marshal(tools)
	m.MaxToolsBytes = len(one) + len(one)/2 // room for one list, not two
	tokenB := map[string]string{"mcp_token": "tok-user-b-9876543210"}
	tokenC := map[string]string{"mcp_token": "tok-user-c-5555555555"}
	if _, err := m.Tools(ctx, "srv-1", tokenA, true); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Tools(ctx, "srv-1", tokenB, false); err != nil { // A's list dropped
		t.Fatal(err)
	}
	up.AddTool("added_later", "new", `{"type":"object"}`, nil)
	if tools, _ := m.Tools(ctx, "srv-1", tokenA, false); !hasTool(tools, "added_later") {
		t.Error("A's list was kept beside B's past the bound: the cached one came back")
	}
	// Now A's is the newest, B's dropped; C's drops A's. Within the bound
	// (raised), B's and C's are both kept.
	m.MaxToolsBytes = 4 * len(one)
	if _, err := m.Tools(ctx, "srv-1", tokenB, false); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Tools(ctx, "srv-1", tokenC, false); err != nil {
		t.Fatal(err)
	}
	up.AddTool("added_last", "new", `{"type":"object"}`, nil)
	for _, tok := range []map[string]string{tokenB, tokenC} {
		if tools, _ := m.Tools(ctx, "srv-1", tok, false); hasTool(tools, "added_last") {
			t.Errorf("%s: a list within the bound was dropped", tok["mcp_token"])
		}
	}
}
