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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/plugins/mcpimport"
	"github.com/blindexec/blindexec/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
// one answer's), over streamable HTTP as over SSE, where the pages come
// on the session's event stream (before, each within the 10 MiB event
// bound, they were read to the 1,000th page: 500 MiB here, 10 GB at 10
// MiB a page).
// Nothing is cached either way.
func TestToolsListBounded(t *testing.T) {
	desc := strings.Repeat("d", 4<<10)
	padded := func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "answers to one listing are larger than 12582912 bytes")
	}
	for _, tc := range []struct {
		name      string
		transport string
		perPage   int
		pad       int
		maxPages  int64
		wantError func(error) bool
	}{
		// 16 tools of some 4 kB a page: the bound is passed on the 17th page.
		{"tools on every page", store.TransportStreamableHTTP, 16, 0, 20, func(err error) bool {
			var tl *mcpimport.TooLargeError
			return errors.As(err, &tl) && tl.Listed && tl.Max == 1<<20 && strings.Contains(err.Error(), "1 MiB (BLINDEXEC_IMPORT_MAX_MB)")
		}},
		{"empty pages", store.TransportStreamableHTTP, 0, 0, 1000, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "more than 1000 pages")
		}},
		// 12 MiB of answers read in all (twice the list's 1 MiB and one
		// answer's 10): the 25th page of 512 kB passes it.
		{"padded pages", store.TransportStreamableHTTP, 0, 512 << 10, 26, padded},
		{"padded pages over SSE", store.TransportSSE, 0, 512 << 10, 26, padded},
		// The endpoint event may name another origin, where the engine
		// posts without the server's credentials; its answers still come
		// on the session's stream, and count.
		{"padded pages over SSE posted to another origin", store.TransportSSE, 0, 512 << 10, 26, padded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pages, written, streams atomic.Int64
			answer := func(id json.RawMessage, method string) any {
				var result any
				switch method {
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
					if len(id) == 0 {
						return nil // a notification
					}
					return map[string]any{"jsonrpc": "2.0", "id": id, // a request this server does not know
						"error": map[string]any{"code": -32601, "message": "method not found"}}
				}
				return map[string]any{"jsonrpc": "2.0", "id": id, "result": result}
			}
			events := make(chan []byte, 1) // the SSE stream's answers
			endpoint := "/message"
			var handler http.HandlerFunc = func(w http.ResponseWriter, r *http.Request) {
				if tc.transport == store.TransportSSE && r.Method == http.MethodGet {
					streams.Add(1)
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = io.WriteString(w, "event: endpoint\ndata: "+endpoint+"\n\n")
					w.(http.Flusher).Flush()
					for {
						select {
						case <-r.Context().Done():
							return
						case b := <-events:
							n, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
							written.Add(int64(n))
							if err != nil {
								return
							}
							w.(http.Flusher).Flush()
						}
					}
				}
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&msg) != nil {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				a := answer(msg.ID, msg.Method)
				if a == nil || tc.transport == store.TransportSSE {
					w.WriteHeader(http.StatusAccepted)
					if a != nil {
						b, _ := json.Marshal(a)
						select {
						case events <- b:
						case <-r.Context().Done():
						}
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				b, _ := json.Marshal(a)
				n, _ := w.Write(b)
				written.Add(int64(n))
			}
			srv := httptest.NewServer(handler)
			t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
			if strings.Contains(tc.name, "another origin") {
				other := httptest.NewServer(handler)
				t.Cleanup(func() { other.CloseClientConnections(); other.Close() })
				endpoint = other.URL + "/message"
			}
			row := store.MCPServer{ID: "srv-1", Name: "endless", Transport: tc.transport, URL: srv.URL}
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
			// The budget (12 MiB) and at most the page that passed it.
			if w := written.Load(); tc.pad > 0 && w > 12<<20+int64(tc.pad)+64<<10 {
				t.Errorf("%d bytes of answers sent and read, want at most the budget and one page", w)
			}
			// The listing had a session of its own, which the refusal
			// ended: the next call is answered on the shared session's.
			if tc.transport == store.TransportSSE {
				_, err := m.CallTool(ctx, mcp.Call{Server: "srv-1", Tool: "any"})
				if err == nil || !strings.Contains(err.Error(), "method not found") || streams.Load() != 2 {
					t.Errorf("a call after the refusal: %v over %d streams; want the server's answer on a second stream", err, streams.Load())
				}
			}
		})
	}
}

// TestSSEListingAlone: an SSE listing is charged all its session's event
// stream brings while it is in flight, so it runs on a session of its
// own. Before, on the session shared by every user of the same
// credentials (none here), four calls of another user reading 4 MiB
// answers during a listing of one tool made it fail over its 12 MiB
// budget.
func TestSSEListingAlone(t *testing.T) {
	big := strings.Repeat("b", 4<<20)
	var streams sync.Map // the stream's number → chan of its answers
	var opened atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			n := opened.Add(1)
			events := make(chan []byte, 16)
			streams.Store(fmt.Sprint(n), events)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: endpoint\ndata: /message?s=%d\n\n", n)
			w.(http.Flusher).Flush()
			for {
				select {
				case <-r.Context().Done():
					return
				case b := <-events:
					fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
					w.(http.Flusher).Flush()
				}
			}
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&msg)
		w.WriteHeader(http.StatusAccepted)
		if len(msg.ID) == 0 {
			return // a notification
		}
		var result any
		switch msg.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "big", "version": "1"}}
		case "tools/list":
			time.Sleep(300 * time.Millisecond) // the other calls come meanwhile
			result = map[string]any{"tools": []any{map[string]any{"name": "read", "inputSchema": map[string]any{"type": "object"}}}}
		case "tools/call":
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": big}}}
		}
		answer := map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result}
		if result == nil {
			answer = map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "method not found"}}
		}
		b, _ := json.Marshal(answer)
		if ch, ok := streams.Load(r.URL.Query().Get("s")); ok {
			ch.(chan []byte) <- b
		}
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	_, m := setup(t, store.MCPServer{ID: "srv-1", Name: "big", Transport: store.TransportSSE, URL: srv.URL})
	m.MaxToolsBytes = 1 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := m.CallTool(ctx, mcp.Call{Server: "srv-1", Tool: "read"}); err != nil { // the shared session open
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var tools []*sdk.Tool
	var listErr error
	wg.Add(1)
	go func() { defer wg.Done(); tools, listErr = m.Tools(ctx, "srv-1", nil, true) }()
	time.Sleep(100 * time.Millisecond)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.CallTool(ctx, mcp.Call{Server: "srv-1", Tool: "read"}); err != nil {
				t.Errorf("a call during the listing: %v", err)
			}
		}()
	}
	wg.Wait()
	if listErr != nil || len(tools) != 1 {
		t.Errorf("Tools = %d tools, %v; want the one tool, whatever the shared session read meanwhile", len(tools), listErr)
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
