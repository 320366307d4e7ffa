package mcprelay

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRawServesTheSDKClient holds the hand-written relay to what the
// go-sdk's client expects over both transports: a session, the tool and
// its schema, a call answered with the upstream's bytes, a bad call refused.
func TestRawServesTheSDKClient(t *testing.T) {
	const answer = `{"Result":[{"Name":"字节跳动 <&>"}]}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Token") != APIKey || r.URL.Query().Get("keyword") != "字节跳动" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		io.WriteString(w, answer)
	}))
	defer up.Close()
	relay := NewRaw(up.URL)
	srv := httptest.NewServer(relay)
	defer srv.Close()

	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		for _, tc := range []struct {
			name      string
			transport func(t *testing.T) sdk.Transport
		}{
			{"streamable HTTP", func(*testing.T) sdk.Transport {
				return &sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}
			}},
			{"stdio", func(t *testing.T) sdk.Transport {
				cr, sw := io.Pipe() // server → client
				sr, cw := io.Pipe() // client → server
				done := make(chan error, 1)
				go func() { done <- relay.ServeStdio(context.Background(), sr, sw); sw.Close() }()
				t.Cleanup(func() {
					cw.Close()
					if err := <-done; err != nil {
						t.Errorf("ServeStdio: %v", err)
					}
				})
				return &sdk.IOTransport{Reader: cr, Writer: cw}
			}},
		} {
			t.Run(version+" "+tc.name, func(t *testing.T) {
				ctx := context.Background()
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tc.transport(t), &sdk.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				defer cs.Close()
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Errorf("protocol %s, want %s", got, version)
				}
				tools, err := cs.ListTools(ctx, nil)
				if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != Tool {
					t.Fatalf("tools/list = %+v, %v; want the one tool", tools, err)
				}
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: Tool, Arguments: map[string]any{"keyword": "字节跳动"}})
				if err != nil || res.IsError || len(res.Content) != 1 {
					t.Fatalf("tools/call = %+v, %v", res, err)
				}
				if got := res.Content[0].(*sdk.TextContent).Text; got != answer {
					t.Errorf("text = %q, want the upstream's %q", got, answer)
				}
				if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
					t.Errorf("an unknown tool: err = %v, want unknown tool", err)
				}
				if err := cs.Ping(ctx, nil); err != nil {
					t.Errorf("ping: %v", err)
				}
			})
		}
	}
}

// TestRawHTTPSessions: a message outside a session is refused, and a
// closed session is gone.
func TestRawHTTPSessions(t *testing.T) {
	srv := httptest.NewServer(NewRaw("http://127.0.0.1:9"))
	defer srv.Close()
	post := func(session, body string) *http.Response {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp := post("", list); resp.StatusCode != http.StatusNotFound {
		t.Errorf("no session: HTTP %d, want 404", resp.StatusCode)
	}
	init := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`)
	sid := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q", init.StatusCode, sid)
	}
	if resp := post(sid, list); resp.StatusCode != http.StatusOK {
		t.Errorf("in the session: HTTP %d, want 200", resp.StatusCode)
	}
	req, _ := http.NewRequest("DELETE", srv.URL, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v, %v", resp, err)
	}
	if resp := post(sid, list); resp.StatusCode != http.StatusNotFound {
		t.Errorf("closed session: HTTP %d, want 404", resp.StatusCode)
	}
	// 2026-07-28: no session, the Mcp-Method header matching the body.
	for method, want := range map[string]int{"tools/list": http.StatusOK, "tools/call": http.StatusBadRequest} {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(list))
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("2026-07-28, Mcp-Method %s: HTTP %d, want %d", method, resp.StatusCode, want)
		}
	}
}

// The hand-written relay's tools/call with a client that writes the
// messages itself, beside engine/mcpserver's BenchmarkServeLinesCall and
// BenchmarkHandlerCall (the same messages, an upstream on loopback): the
// floor's own allocations and profile (issue 38).
const (
	benchInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	benchCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + Tool + `","arguments":{"keyword":"acme"}}}`
)

func benchUpstream(b *testing.B) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"company":"ACME","q":"`+r.URL.Query().Get("keyword")+`"}`)
	}))
	b.Cleanup(up.Close)
	return up.URL
}

func BenchmarkRawStdioCall(b *testing.B) {
	relay := NewRaw(benchUpstream(b))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go relay.ServeStdio(context.Background(), inR, outW)
	b.Cleanup(func() { inW.Close() })
	answers := bufio.NewReader(outR)
	roundTrip := func(line string) string {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			b.Fatal(err)
		}
		got, err := answers.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		return got
	}
	roundTrip(benchInit)
	if got := roundTrip(benchCall); !strings.Contains(got, "ACME") {
		b.Fatalf("tools/call: %s", got)
	}
	b.ReportAllocs()
	for b.Loop() {
		roundTrip(benchCall)
	}
}

func BenchmarkRawHTTPCall(b *testing.B) {
	relay := NewRaw(benchUpstream(b))
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	post := func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.Header = header.Clone()
		w := httptest.NewRecorder()
		relay.ServeHTTP(w, req)
		return w
	}
	w := post(benchInit)
	header.Set("Mcp-Session-Id", w.Header().Get("Mcp-Session-Id"))
	if w := post(benchCall); !strings.Contains(w.Body.String(), "ACME") {
		b.Fatalf("tools/call: %d %s", w.Code, w.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		post(benchCall)
	}
}
