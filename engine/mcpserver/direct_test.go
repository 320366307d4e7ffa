package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/internal/httpbody"
)

var executionID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// TestDirectMatchesSDK: the engine's own answers to requests of the
// stateless era (tools/list and tools/call, and whatever it leaves to the
// SDK) are the SDK's stateless handler's answers to the same requests:
// valid, malformed, headers that differ from the body, versions not
// served, bodies over the limit.
func TestDirectMatchesSDK(t *testing.T) {
	up := echoUpstream(t)
	e := newErasEnv(t, mcpserver.Options{}, up.Config.Handler.ServeHTTP, "b", "a", "c")
	sdkOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := userToken(r)
		if err != nil {
			t.Fatal(err)
		}
		mcpserver.ServeSDK(e.svc, w, r, id)
	}))
	t.Cleanup(sdkOnly.Close)
	sdkEnv := *e
	sdkEnv.url = sdkOnly.URL

	const caps = `"io.modelcontextprotocol/clientCapabilities"`
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`
	call := `{"jsonrpc":"2.0","id":"c-2","method":"tools/call","params":{"name":"a","arguments":{"q":"y"},` + meta + `}}`
	for _, tc := range []struct {
		name string
		body string
		hdr  map[string]string
	}{
		{"tools/list", list, nil},
		{"tools/list, second page", strings.Replace(list, `"params":{`, `"params":{"cursor":"1",`, 1), nil},
		{"tools/list, a cursor not given", strings.Replace(list, `"params":{`, `"params":{"cursor":"x",`, 1), nil},
		{"tools/list, a cursor not a string", strings.Replace(list, `"params":{`, `"params":{"cursor":7,`, 1), nil},
		{"tools/call", call, nil},
		{"tools/call, no arguments", strings.Replace(call, `"arguments":{"q":"y"},`, ``, 1), nil},
		{"tools/call, arguments not of the schema", strings.Replace(call, `{"q":"y"}`, `{"q":5}`, 1), nil},
		{"tools/call, a tool not in the catalog", strings.Replace(call, `"name":"a"`, `"name":"zz"`, 1), map[string]string{"Mcp-Name": "zz"}},
		{"tools/call, no clientInfo", strings.Replace(call, `,"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}`, ``, 1), nil},
		{"tools/call, elicitation declared", strings.Replace(call, caps+`:{}`, caps+`:{"elicitation":{"form":{},"url":{}}}`, 1), nil},
		{"tools/call, a stale requestState", strings.Replace(call, `"name":"a",`, `"name":"a","requestState":"xyz",`, 1), nil},
		{"malformed: not JSON", `{"jsonrpc":"2.0","id":1,`, map[string]string{"Mcp-Method": "tools/list"}},
		{"malformed: a batch", `[` + list + `]`, map[string]string{"Mcp-Method": "tools/list"}},
		{"malformed: a notification", strings.Replace(list, `"id":1,`, ``, 1), nil},
		{"malformed: params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}`, nil},
		{"malformed: the name not a string", strings.Replace(call, `"name":"a"`, `"name":5`, 1), map[string]string{"Mcp-Name": "5"}},
		{"malformed: no clientCapabilities", strings.Replace(call, caps+`:{},`, ``, 1), nil},
		{"malformed: clientCapabilities not an object", strings.Replace(call, caps+`:{}`, caps+`:"all"`, 1), nil},
		{"malformed: clientInfo's name not a string", strings.Replace(call, `{"name":"raw"`, `{"name":5`, 1), nil},
		{"malformed: jsonrpc not 2.0", strings.Replace(call, `"2.0"`, `"1.0"`, 1), nil},
		{"a repeated name", strings.Replace(call, `"name":"a",`, `"name":"a","name":"b",`, 1), nil},
		{"a repeated name, the header the last", strings.Replace(call, `"name":"a",`, `"name":"b","name":"a",`, 1), nil},
		{"an escaped key", strings.Replace(call, `"name":"a",`, `"na\u006de":"a",`, 1), nil},
		{"header mismatch: Mcp-Method", list, map[string]string{"Mcp-Method": "tools/call"}},
		{"header mismatch: Mcp-Name", call, map[string]string{"Mcp-Name": "b"}},
		{"header mismatch: no Mcp-Name", call, map[string]string{"Mcp-Name": ""}},
		{"header mismatch: no Mcp-Method", call, map[string]string{"Mcp-Method": ""}},
		{"header mismatch: the version differs from _meta", call, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}},
		{"unknown version in _meta", strings.Replace(call, `"2026-07-28"`, `"2027-01-01"`, 1), nil},
		{"an older version in _meta", strings.Replace(call, `"2026-07-28"`, `"2025-11-25"`, 1), nil},
		{"wrong Content-Type", call, map[string]string{"Content-Type": "text/plain"}},
		{"Accept without event-stream", call, map[string]string{"Accept": "application/json"}},
		{"id: a number past int64", strings.Replace(call, `"id":"c-2"`, `"id":123456789012345678901234567890`, 1), nil},
		{"id: a number past float64", strings.Replace(call, `"id":"c-2"`, `"id":1e400`, 1), nil},
		{"id: a fraction", strings.Replace(call, `"id":"c-2"`, `"id":1.5`, 1), nil},
		{"id: negative", strings.Replace(call, `"id":"c-2"`, `"id":-7`, 1), nil},
		{"id: null", strings.Replace(call, `"id":"c-2"`, `"id":null`, 1), nil},
		{"id: an object", strings.Replace(call, `"id":"c-2"`, `"id":{"a":1}`, 1), nil},
		{"id: an array", strings.Replace(call, `"id":"c-2"`, `"id":[1]`, 1), nil},
		{"id: true", strings.Replace(call, `"id":"c-2"`, `"id":true`, 1), nil},
		{"id: a long string", strings.Replace(call, `"c-2"`, `"`+strings.Repeat("i", 1<<20)+`"`, 1), nil},
		{"id: an escaped string", strings.Replace(call, `"c-2"`, `"\u0063-\n2"`, 1), nil},
		{"id: repeated", strings.Replace(call, `"id":"c-2"`, `"id":"c-2","id":3`, 1), nil},
		{"method: repeated", strings.Replace(call, `"method":"tools/call"`, `"method":"tools/list","method":"tools/call"`, 1), nil},
		{"method: escaped", strings.Replace(call, `"method":"tools/call"`, `"method":"tools\/call"`, 1), nil},
		{"name: escaped, the header plain", strings.Replace(call, `"name":"a"`, `"name":"\u0061"`, 1), nil},
		{"name: a control character", strings.Replace(call, `"name":"a"`, `"name":"a\u0000"`, 1), map[string]string{"Mcp-Name": "a"}},
		{"arguments: not an object", strings.Replace(call, `{"q":"y"}`, `[1]`, 1), nil},
		{"arguments: null", strings.Replace(call, `{"q":"y"}`, `null`, 1), nil},
		{"params: repeated", strings.Replace(call, `"params":{`, `"params":{},"params":{`, 1), nil},
		{"_meta: repeated version", strings.Replace(call, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/protocolVersion":"2026-07-28"`, 1), nil},
		{"oversized", strings.Replace(call, `"y"`, `"`+strings.Repeat("y", httpbody.MaxJSON)+`"`, 1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotStatus, got := e.post(7, tc.body, tc.hdr)
			wantStatus, want := sdkEnv.post(7, tc.body, tc.hdr)
			if gotStatus != wantStatus {
				t.Errorf("status %d, the SDK's %d:\n%s\nthe SDK's:\n%s", gotStatus, wantStatus, got, want)
			}
			// Each call has an execution id of its own.
			got, want = executionID.ReplaceAllString(got, "ID"), executionID.ReplaceAllString(want, "ID")
			var g, w any
			if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil {
				g, w = strings.TrimSpace(got), strings.TrimSpace(want)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("answer:\n%s\nthe SDK's:\n%s", got, want)
			}
		})
	}
}

// TestDirectTakesCalls: a tools/call of the stateless era is answered by
// the engine, not the SDK, over /mcp and stdio: the SDK's stateless
// handler allocates 412 kB a call, its server over stdio 158 kB
// (BenchmarkHandlerCallStateless, BenchmarkServeLinesCallStateless
// before the engine answered); the engine's answer 16–22 kB, the
// upstream's round trip included.
func TestDirectTakesCalls(t *testing.T) {
	up := echoUpstream(t)
	e := newErasEnv(t, mcpserver.Options{}, up.Config.Handler.ServeHTTP, "a")
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","arguments":{"q":"y"},` + meta + `}}`
	h := e.svc.Handler(userToken)
	overHTTP := func() string {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(call))
		for k, v := range map[string]string{"Authorization": "Bearer user-7", "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "a"} {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Body.String()
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	go mcpserver.ServeLines(e.svc, ctx, 7, inR, outW)
	t.Cleanup(func() { cancel(); inW.Close() })
	answers := bufio.NewReader(outR)
	overStdio := func() string {
		io.WriteString(inW, call+"\n")
		got, _ := answers.ReadString('\n')
		return got
	}
	for name, post := range map[string]func() string{"/mcp": overHTTP, "stdio": overStdio} {
		if got := post(); !strings.Contains(got, `\"q\":\"y\"`) { // the tool set built
			t.Fatalf("%s: tools/call: %s", name, got)
		}
		const n = 50
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			post()
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 80_000 {
			t.Errorf("%s: %d bytes allocated a call: the SDK answered, not the engine", name, per)
		}
	}
}

// TestDirectLinesMatchSDK: over stdio (`mcp serve --stdio`), the engine's
// own answers to requests of the stateless era are the SDK's server's
// answers to the same lines.
func TestDirectLinesMatchSDK(t *testing.T) {
	up := echoUpstream(t)
	e := newErasEnv(t, mcpserver.Options{}, up.Config.Handler.ServeHTTP, "b", "a", "c")
	serve := func(run func(*mcpserver.Service, context.Context, int64, io.ReadCloser, io.Writer) error) func(string) string {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { run(e.svc, ctx, 7, inR, outW); close(done) }()
		t.Cleanup(func() { cancel(); inW.Close(); <-done })
		answers := bufio.NewReader(outR)
		return func(line string) string {
			if _, err := io.WriteString(inW, line+"\n"); err != nil {
				t.Fatal(err)
			}
			got, err := answers.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
	}
	engine, sdkOnly := serve(mcpserver.ServeLines), serve(mcpserver.ServeLinesSDK)

	const caps = `"io.modelcontextprotocol/clientCapabilities"`
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`
	call := `{"jsonrpc":"2.0","id":"c-2","method":"tools/call","params":{"name":"a","arguments":{"q":"y"},` + meta + `}}`
	for _, tc := range []struct{ name, line string }{
		{"tools/list", list},
		{"tools/list, second page", strings.Replace(list, `"params":{`, `"params":{"cursor":"1",`, 1)},
		{"tools/list, a cursor not given", strings.Replace(list, `"params":{`, `"params":{"cursor":"x",`, 1)},
		{"tools/call", call},
		{"tools/call, no arguments", strings.Replace(call, `"arguments":{"q":"y"},`, ``, 1)},
		{"tools/call, arguments not of the schema", strings.Replace(call, `{"q":"y"}`, `{"q":5}`, 1)},
		{"tools/call, a tool not in the catalog", strings.Replace(call, `"name":"a"`, `"name":"zz"`, 1)},
		{"tools/call, no clientInfo", strings.Replace(call, `,"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}`, ``, 1)},
		{"tools/call, elicitation declared", strings.Replace(call, caps+`:{}`, caps+`:{"elicitation":{"form":{},"url":{}}}`, 1)},
		{"tools/call, a stale requestState", strings.Replace(call, `"name":"a",`, `"name":"a","requestState":"xyz",`, 1)},
		{"malformed: no clientCapabilities", strings.Replace(call, caps+`:{},`, ``, 1)},
		{"malformed: clientCapabilities not an object", strings.Replace(call, caps+`:{}`, caps+`:"all"`, 1)},
		{"malformed: clientInfo's name not a string", strings.Replace(call, `{"name":"raw"`, `{"name":5`, 1)},
		{"malformed: the name not a string", strings.Replace(call, `"name":"a"`, `"name":5`, 1)},
		{"unknown version in _meta", strings.Replace(call, `"2026-07-28"`, `"2027-01-01"`, 1)},
		{"id: a number past float64", strings.Replace(call, `"id":"c-2"`, `"id":1e400`, 1)},
		{"id: a negative number past float64", strings.Replace(call, `"id":"c-2"`, `"id":-1e400`, 1)},
		{"a repeated name", strings.Replace(call, `"name":"a",`, `"name":"a","name":"b",`, 1)},
		{"an escaped key", strings.Replace(call, `"name":"a",`, `"na\u006de":"b",`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := executionID.ReplaceAllString(engine(tc.line), "ID"), executionID.ReplaceAllString(sdkOnly(tc.line), "ID")
			var g, w any
			if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil || !reflect.DeepEqual(g, w) {
				t.Errorf("answer:\n%s\nthe SDK's:\n%s", got, want)
			}
		})
	}
}

// TestDirectLinesCancelled: over stdio, notifications/cancelled ends a
// call of the stateless era the engine answers, as the SDK's server ends
// its own: the upstream's request is abandoned.
func TestDirectLinesCancelled(t *testing.T) {
	arrived, abandoned := make(chan struct{}), make(chan struct{})
	e := newErasEnv(t, mcpserver.Options{}, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
		close(abandoned)
	}, "slow")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	go mcpserver.ServeLines(e.svc, ctx, 7, inR, outW)
	go io.Copy(io.Discard, outR)
	t.Cleanup(func() { cancel(); inW.Close() })
	io.WriteString(inW, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{},`+meta+"}}\n")
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never reached the upstream")
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`+"\n")
	select {
	case <-abandoned:
	case <-time.After(10 * time.Second):
		t.Fatal("notifications/cancelled did not end the call")
	}
}
