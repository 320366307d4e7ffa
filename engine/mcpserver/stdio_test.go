package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
)

func TestDecodeMessage(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		code       int64 // the error's; 0: taken
	}{
		{"call, numeric id", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2]}}}`, 0},
		{"call, string id", `{"method":"tools/list","id":"a-1","jsonrpc":"2.0"}`, 0},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0},
		{"null id is a notification", `{"jsonrpc":"2.0","id":null,"method":"notifications/cancelled","params":{"requestId":3}}`, 0},
		{"escaped key and value", `{"jsonrpc":"2.0","id":1,"meth\u006fd":"tools/\u006cist"}`, 0},
		{"repeated key: the last wins", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}`, 0},
		{"unknown keys ignored", `{"jsonrpc":"2.0","id":1,"method":"ping","extra":{"x":[]}}`, 0},
		{"a response takes the SDK's decoder", `{"jsonrpc":"2.0","id":4,"result":{}}`, 0},
		{"an error response", `{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"no"}}`, 0},
		{"not JSON", `{"jsonrpc":"2.0",`, jsonrpc.CodeParseError},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, jsonrpc.CodeInvalidRequest},
		{"not an object", `"ping"`, jsonrpc.CodeInvalidRequest},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{"no version", `{"id":1,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":5}`, jsonrpc.CodeInvalidRequest},
		{"id an object", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		// The SDK's decoder refuses them; read as a float, they became the
		// id -9223372036854775808 and the call was made (mcp78).
		{"id a number past float64", `{"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":{"name":"x"}}`, jsonrpc.CodeInvalidRequest},
		{"id a negative number past float64", `{"jsonrpc":"2.0","id":-1e400,"method":"tools/call","params":{"name":"x"}}`, jsonrpc.CodeInvalidRequest},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`, jsonrpc.CodeInvalidRequest},
		{"nested past the limit", `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`, jsonrpc.CodeInvalidRequest},
		{"more elements than the limit", `{"jsonrpc":"2.0","id":1,"method":"ping","params":[` + strings.Repeat("0,", 1_000_000) + `0]}`, jsonrpc.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeMessage([]byte(tc.line))
			if tc.code != 0 {
				var de *decodeError
				if !errors.As(err, &de) || de.code != tc.code {
					t.Fatalf("decodeMessage = %v, %v; want error code %d", got, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := jsonrpc.DecodeMessage([]byte(tc.line))
			if err != nil {
				t.Fatalf("the SDK's decoder refuses it: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decodeMessage = %#v\nthe SDK's = %#v", got, want)
			}
			// A body, read in place: the same message, whose method and
			// id stay its own when the bytes are written over.
			body := []byte(tc.line)
			inPlace, err := decodeChecked(body, true)
			if err != nil || !reflect.DeepEqual(inPlace, want) {
				t.Fatalf("decodeChecked(owned) = %#v, %v\nthe SDK's = %#v", inPlace, err, want)
			}
			for i := range body {
				body[i] = 'x'
			}
			if r, ok := inPlace.(*jsonrpc.Request); ok && (r.Method != want.(*jsonrpc.Request).Method || r.ID != want.(*jsonrpc.Request).ID) {
				t.Fatalf("after the body was written over: method %q, id %v", r.Method, r.ID.Raw())
			}
		})
	}
}

// FuzzDecodeMessage: whatever decodeMessage takes as a request, the SDK's own
// decoder reads the same way.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":"7","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":null}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"a\"b"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`[1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := decodeMessage(line)
		req, ok := got.(*jsonrpc.Request)
		if err != nil || !ok {
			return
		}
		want, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			t.Fatalf("decodeMessage took %q as %#v; the SDK's decoder refuses it: %v", line, req, err)
		}
		w, ok := want.(*jsonrpc.Request)
		if !ok || w.ID != req.ID || w.Method != req.Method || !bytes.Equal(w.Params, req.Params) {
			t.Fatalf("decodeMessage(%q) = %#v, the SDK's %#v", line, req, want)
		}
	})
}

// echoExecutor answers every call with its arguments.
// echoExecutor is an executor whose http calls answer their arguments:
// the sessions and transports are under test here, not an upstream.
func echoExecutor() *engine.Executor {
	e := &engine.Executor{}
	e.Register(plugins.TypeHTTP, echoInvoker{})
	return e
}

type echoInvoker struct{}

func (echoInvoker) Invoke(_ context.Context, p *engine.Prepared) (*engine.Response, error) {
	b, err := json.Marshal(p.Arguments)
	return &engine.Response{StatusCode: 200, ContentType: "application/json", Body: b, Attempts: 1}, err
}

type oneTool []*plugins.Plugin

func (c oneTool) EnabledPlugins(context.Context) ([]*plugins.Plugin, error) { return c, nil }
func (oneTool) Version() int64                                              { return 1 }

// TestLineTransport drives a session over pipes, as `mcp serve --stdio`
// is driven: a go-sdk client through it, then lines a client should not
// send, each answered while the session goes on, then the end.
func TestLineTransport(t *testing.T) {
	p := &plugins.Plugin{Name: "echo", Title: "Echo", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
	// Tool search on, so that a search makes the server send a message
	// of its own (notifications/tools/list_changed) over the transport.
	svc := NewService(oneTool{p}, echoExecutor(), Options{Search: toolset.Config{Mode: toolset.ModeAlways}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The go-sdk client, over the SDK's own newline-delimited transport.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	sctx, stop := context.WithCancel(ctx)
	go func() { served <- svc.serveLines(sctx, 7, inR, outW) }()
	changed := make(chan struct{}, 1)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: plugins.SearchToolsName, Arguments: map[string]any{"query": "echo"}}); err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after the search")
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "über\nline"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if got := res.Content[0].(*sdk.TextContent).Text; got != `{"text":"über\nline"}` {
		t.Fatalf("text = %s", got)
	}
	// The context first: a client closing first would end the session
	// cleanly (end of input), which is not what this checks.
	stop()
	if err := <-served; err == nil {
		t.Fatal("the session did not end with its context")
	}
	outW.Close() // the server's end of its output, as its exit closes stdout
	cs.Close()

	// Raw lines: each bad one is answered, and the session goes on.
	inR, inW = io.Pipe()
	outR, outW = io.Pipe()
	sctx, stop = context.WithCancel(ctx)
	defer stop()
	go func() { served <- svc.serveLines(sctx, 7, inR, outW) }()
	out := bufio.NewScanner(outR)
	for _, step := range []struct{ send, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, `"id":1,"result":{`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\r\n\n   ", ""},
		{`{"jsonrpc":"2.0","id":2,`, `{"error":{"code":-32700,"message":"parse error: the message is not valid JSON"},"id":null,"jsonrpc":"2.0"}`},
		{`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, `"code":-32600,"message":"JSON-RPC batches are not supported`},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`, `"id":4,"result":{"content":[{"type":"text","text":"{\"text\":\"still here\"}"}]`},
	} {
		if _, err := io.WriteString(inW, step.send+"\n"); err != nil {
			t.Fatal(err)
		}
		if step.want == "" {
			continue
		}
		if !out.Scan() {
			t.Fatalf("no answer to %s: %v", step.send, out.Err())
		}
		if !strings.Contains(out.Text(), step.want) {
			t.Fatalf("sent %s\ngot  %s\nwant %s", step.send, out.Text(), step.want)
		}
	}
	// A client closing stdin ends the session.
	inW.Close()
	select {
	case err := <-served:
		if err != nil && !errors.Is(err, io.EOF) {
			t.Logf("session ended: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the session did not end when its input closed")
	}

	// A line past the length limit ends the session, saying so.
	inR, inW = io.Pipe()
	go func() { served <- svc.serveLines(ctx, 7, inR, io.Discard) }()
	go func() {
		io.WriteString(inW, strings.Repeat(" ", maxLine)+"{}\n")
	}()
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "longer than") {
			t.Fatalf("a line past the limit: the session ended with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("a line past the limit did not end the session")
	}
	inR.Close()
}

// TestAppendResponse: a successful response is written as
// jsonrpc.EncodeMessage writes it; anything else is left to it.
func TestAppendResponse(t *testing.T) {
	id := func(v any) jsonrpc.ID {
		i, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	result := json.RawMessage(`{"content":[{"type":"text","text":"{\"a\":\"<&>\"}"}],"structuredContent":{"a":"<&> 字节跳动 \u2028"}}`)
	for _, r := range []*jsonrpc.Response{
		{ID: id(7.0), Result: result},
		{ID: id(-1.0), Result: json.RawMessage(`{}`)},
		{ID: id("a-1"), Result: result},
		{ID: id(""), Result: json.RawMessage(`null`)},
	} {
		checkResponse(t, r, true)
	}
	for _, msg := range []jsonrpc.Message{
		&jsonrpc.Response{ID: id(7.0), Error: errors.New("boom")},
		&jsonrpc.Response{ID: id(7.0)},                                                     // no result: omitted
		&jsonrpc.Response{ID: id(`a"b`), Result: result},                                   // the id needs escaping
		&jsonrpc.Response{ID: id("é"), Result: result},                                     // past ASCII
		&jsonrpc.Response{ID: id(7.0), Result: json.RawMessage("{\n\"a\":1}")},             // a newline would end the line
		&jsonrpc.Request{ID: id(7.0), Method: "tools/call", Params: json.RawMessage(`{}`)}, // not a response
	} {
		if b, ok := appendResponse(nil, msg); ok {
			t.Errorf("%+v: taken, wrote %s", msg, b)
		}
	}
}

// FuzzAppendResponse: whatever result the SDK encoded (valid, compact
// JSON) under whatever id, the fast path writes EncodeMessage's bytes.
func FuzzAppendResponse(f *testing.F) {
	f.Add(int64(7), "", []byte(`{"content":[{"type":"text","text":"x"}]}`))
	f.Add(int64(0), "req-1", []byte(`{"a":"<&> \u2028 字"}`))
	f.Fuzz(func(t *testing.T, n int64, s string, raw []byte) {
		var compact bytes.Buffer
		if json.Compact(&compact, raw) != nil || compact.Len() == 0 {
			return
		}
		var v any = float64(n) // as decoded from JSON
		if s != "" {
			v = s
		}
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			return
		}
		checkResponse(t, &jsonrpc.Response{ID: id, Result: compact.Bytes()}, false)
	})
}

// checkResponse compares appendResponse with jsonrpc.EncodeMessage for r;
// taken says the fast path must take it.
func checkResponse(t *testing.T, r *jsonrpc.Response, taken bool) {
	t.Helper()
	fast, ok := appendResponse(nil, r)
	if !ok {
		if taken {
			t.Errorf("%+v: not taken", r)
		}
		return
	}
	want, err := jsonrpc.EncodeMessage(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fast, want) {
		t.Errorf("fast %s\nwant %s", fast, want)
	}
}

// BenchmarkWriteResponse writes a tools/call answer of 16 kB (an indented
// list the engine compacted; as text and as structuredContent, as the
// catalog answers) the SDK's way (EncodeMessage) and lineConn's.
func BenchmarkWriteResponse(b *testing.B) {
	type item struct {
		ID      int    `json:"id"`
		Company string `json:"company"`
		Address string `json:"address"`
	}
	var items []item
	for i := range 150 {
		items = append(items, item{ID: i, Company: "ACME 字节跳动 " + strconv.Itoa(i), Address: "1 Example Road, Haidian, Beijing"})
	}
	output, err := json.Marshal(map[string]any{"items": items})
	if err != nil {
		b.Fatal(err)
	}
	var result bytes.Buffer // as the SDK encodes a result: no HTML escaping, compact
	enc := json.NewEncoder(&result)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(output)}}, StructuredContent: json.RawMessage(output)}); err != nil {
		b.Fatal(err)
	}
	id, _ := jsonrpc.MakeID(7.0)
	msg := &jsonrpc.Response{ID: id, Result: bytes.TrimSuffix(result.Bytes(), []byte("\n"))}
	b.Run("sdk", func(b *testing.B) {
		b.SetBytes(int64(len(msg.Result)))
		b.ReportAllocs()
		for b.Loop() {
			out, err := jsonrpc.EncodeMessage(msg)
			if err != nil {
				b.Fatal(err)
			}
			io.Discard.Write(append(out, '\n'))
		}
	})
	b.Run("line", func(b *testing.B) {
		c := &lineConn{w: io.Discard}
		b.SetBytes(int64(len(msg.Result)))
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Write(context.Background(), msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestStdioBothEras: `mcp serve --stdio` answers the go-sdk client at
// 2026-07-28 (server/discover, no initialize) and at 2025-11-25.
func TestStdioBothEras(t *testing.T) {
	p := &plugins.Plugin{Name: "echo", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
	svc := NewService(oneTool{p}, echoExecutor(), Options{})
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- svc.serveLines(ctx, 7, inR, outW) }()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
			Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, &sdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != version {
			t.Errorf("negotiated %s, want %s", got, version)
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": version}})
		if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != `{"text":"`+version+`"}` {
			t.Errorf("%s: call = %v %+v", version, err, res)
		}
		cs.Close()
		inW.Close()
		<-served
		outW.Close()
		cancel()
	}
}
