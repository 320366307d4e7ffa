package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// Issue 13, point 3: a client sending its body slowly is cut at the body
// deadline, while a streamed run longer than the write deadline goes on
// to its end.
func TestDeadlines(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond) // the run outlasts the write deadline
		io.WriteString(w, `{"Status":"200"}`)
	})
	llm := openaitest.New(t)
	e := newEnv(t, st, withModel(llm), func(s *api.Server) {
		s.Deadlines = api.Deadlines{Body: 50 * time.Millisecond, Write: 200 * time.Millisecond}
	})

	// A body that stops after 10 of its 100 bytes.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+serviceToken+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":\"x")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a guard: the server must answer long before
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the slow body was not answered: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "body_timeout") {
		t.Errorf("slow body: %d %s, want 408 body_timeout", resp.StatusCode, body)
	}

	// A streamed run: a tool call, then the answer.
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "search_company_basic", Arguments: `{"keyword":"字节跳动"}`}}},
		openaitest.Turn{Content: "done"},
	)
	payload, _ := json.Marshal(seedPayload(t, up.URL, map[string]any{"options": map[string]any{"stream": true}}))
	req, _ := http.NewRequest("POST", e.url+"/v1/runs", bytes.NewReader(payload))
	req.Header.Set("Authorization", "Bearer "+serviceToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events, err := io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(events), "event: run.completed") {
		t.Errorf("the streamed run was cut: %v\n%s", err, events)
	}
}

// A request without a body is not given the body deadline: the server
// reads its connection in the background meanwhile, and a deadline there
// ended the request's context (and its connection's, so every later
// request on it) when it passed. newEnv's handler wraps every body, as a
// middleware may; a GET /mcp stream must outlive the body deadline.
func TestDeadlinesBodyless(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), func(s *api.Server) {
		s.MCP = &api.MCPConfig{}
		s.Deadlines = api.Deadlines{Body: 50 * time.Millisecond}
	})
	_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "stream"})
	h := headerRT{"Authorization": "Bearer " + tok["token"].(string), "Accept": "application/json, text/event-stream"}
	resp, err := (&http.Client{Transport: h}).Post(e.url+"/mcp", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h["Mcp-Session-Id"] = resp.Header.Get("Mcp-Session-Id")
	hc := &http.Client{Transport: h}
	if resp, err = hc.Post(e.url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/mcp", nil)
	if resp, err = hc.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /mcp: %v %v", resp, err)
	}
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the GET stream ended before its client left (%v), within 500 ms; the body deadline is 50 ms", err)
	}
}
