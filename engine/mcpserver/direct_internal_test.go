package mcpserver

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/engine"
)

// readMeta is readDecodedMeta of params as decodeChecked hands them on,
// valid JSON: the fuzzer's are any bytes.
func readMeta(req *jsonrpc.Request, known *clients) (meta, bool) {
	if !gjson.ValidBytes(req.Params) {
		return meta{}, false
	}
	return readDecodedMeta(req, known)
}

// FuzzReadMeta: readMeta reads any params a client sends without
// panicking, and takes only what it may answer: a version served of the
// stateless era, a call's name as the body has it, never search_tools;
// read again, the client comes from the clients known, the same.
func FuzzReadMeta(f *testing.F) {
	const m = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"f","version":"1"}}`
	for _, seed := range []struct{ method, params string }{
		{"tools/call", `{"name":"a","arguments":{"q":"y"},` + m + `}`},
		{"tools/call", `{"name":"a","requestState":"x","inputResponses":{"decision":{"action":"accept","content":{"decision":"approve"}}},` + m + `}`},
		{"tools/list", `{"cursor":"1",` + m + `}`},
		{"tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`},
		{"tools/call", `{"name":"search_tools",` + m + `}`},
		{"tools/call", `[1,2]`},
		{"tools/call", `{"name":"a","name":"search_tools","requestState":"x",` + m + `}`},
		{"tools/call", `{"na\u006de":"search_tools",` + m + `}`},
	} {
		f.Add(seed.method, seed.params)
	}
	f.Fuzz(func(t *testing.T, method, params string) {
		id, _ := jsonrpc.MakeID(float64(1))
		req := &jsonrpc.Request{ID: id, Method: method, Params: []byte(params)}
		var known clients
		got, ok := readMeta(req, &known)
		again, okAgain := readMeta(req, &known) // the client read from known
		if okAgain != ok || ok && (again.version != got.version || !reflect.DeepEqual(again.client, got.client) || again.client.InitializeParams() != got.client.InitializeParams()) {
			t.Fatalf("read again from the clients known: %+v, %v; first %+v, %v", again, okAgain, got, ok)
		}
		if !ok {
			return
		}
		if got.version < firstStateless || got.client.InitializeParams().ProtocolVersion != got.version {
			t.Fatalf("took version %q", got.version)
		}
		switch method {
		case "tools/call":
			var sent map[string]any // as a decoder that reads a repeated key's last value reads it
			if json.Unmarshal([]byte(params), &sent) != nil || got.call == nil || got.name != sent["name"] || got.name == "search_tools" || got.call.Name != got.name {
				t.Fatalf("took call %q (%+v) of %s", got.name, got.call, params)
			}
		case "tools/list":
			if got.call != nil {
				t.Fatalf("a list read as a call: %s", params)
			}
		default:
			t.Fatalf("took method %q", method)
		}
	})
}

// viaEncodingJSON is the answer as the SDK's types write it through
// encoding/json: what appendCompleted's hand-written text must equal.
func viaEncodingJSON(t testing.TB, id jsonrpc.ID, res sdk.Result) any {
	annotate(res)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: b})
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(msg, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// checkCompleted: appendCompleted, when it takes res, writes one line of
// valid JSON that reads as encoding/json's text of the same answer.
func checkCompleted(t testing.TB, id jsonrpc.ID, res func() sdk.Result, taken bool) {
	b, ok := appendCompleted([]byte("x"), id, res())
	if ok != taken {
		t.Fatalf("taken %v, want %v: %s", ok, taken, b)
	}
	if !ok {
		if string(b) != "x" {
			t.Fatalf("not taken, yet b changed: %q", b)
		}
		return
	}
	b = b[1:]
	var got any
	if err := json.Unmarshal(b, &got); err != nil || bytes.IndexByte(b, '\n') >= 0 {
		t.Fatalf("not one line of JSON (%v): %s", err, b)
	}
	if want := viaEncodingJSON(t, id, res()); !reflect.DeepEqual(got, want) {
		t.Fatalf("hand-written:\n%s\nencoding/json's reads as:\n%v", b, want)
	}
}

func TestAppendCompleted(t *testing.T) {
	num, _ := jsonrpc.MakeID(float64(7))
	str, _ := jsonrpc.MakeID("c-2")
	odd, _ := jsonrpc.MakeID("a\"b")
	text := func(s string) []sdk.Content { return []sdk.Content{&sdk.TextContent{Text: s}} }
	for _, tc := range []struct {
		name  string
		id    jsonrpc.ID
		res   func() sdk.Result
		taken bool
	}{
		{"text and structured content", num, func() sdk.Result {
			return completed{&sdk.CallToolResult{Content: text(`{"company":"ACME <&>"}`), StructuredContent: json.RawMessage(`{"company":"ACME <&>"}`)}}
		}, true},
		{"the engine's output, as result makes it", num, func() sdk.Result {
			return completed{result(&engine.Result{OK: true, Output: json.RawMessage(`{"company":"ACME"}`)}, nil)}
		}, true},
		{"an error, a string id", str, func() sdk.Result {
			return completed{&sdk.CallToolResult{IsError: true, Content: text("line\nbreak \"quoted\" \u2028 \xff é")}}
		}, true},
		{"two blocks", num, func() sdk.Result {
			return completed{&sdk.CallToolResult{Content: append(text("a"), &sdk.TextContent{Text: "b"})}}
		}, true},
		{"empty text", num, func() sdk.Result { return completed{&sdk.CallToolResult{Content: text("")}} }, true},
		{"an id to escape", odd, func() sdk.Result { return completed{&sdk.CallToolResult{Content: text("a")}} }, false},
		{"not a completed call", num, func() sdk.Result { return &sdk.CallToolResult{Content: text("a")} }, false},
		{"no content", num, func() sdk.Result { return completed{&sdk.CallToolResult{}} }, false},
		{"_meta set", num, func() sdk.Result {
			return completed{&sdk.CallToolResult{Meta: sdk.Meta{"k": "v"}, Content: text("a")}}
		}, false},
		{"an image", num, func() sdk.Result {
			return completed{&sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}}}
		}, false},
		{"annotated text", num, func() sdk.Result {
			return completed{&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a", Annotations: &sdk.Annotations{Priority: 1}}}}}
		}, false},
		{"structured content indented", num, func() sdk.Result {
			return completed{&sdk.CallToolResult{Content: text("a"), StructuredContent: json.RawMessage("{\n\"a\": 1}")}}
		}, false},
		{"structured content not JSON", num, func() sdk.Result {
			return completed{&sdk.CallToolResult{Content: text("a"), StructuredContent: json.RawMessage(`{"a":`)}}
		}, false},
		{"structured content of another type", num, func() sdk.Result {
			return completed{&sdk.CallToolResult{Content: text("a"), StructuredContent: map[string]any{"a": 1}}}
		}, false},
		{"a request state", num, func() sdk.Result {
			return completed{&sdk.CallToolResult{Content: text("a"), RequestState: "s"}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCompleted(t, tc.id, tc.res, tc.taken) })
	}
}

// FuzzAppendCompleted: whatever text and structured content an upstream's
// answer becomes, the hand-written answer reads as encoding/json's.
func FuzzAppendCompleted(f *testing.F) {
	f.Add(`{"company":"ACME"}`, `{"company":"ACME"}`, false)
	f.Add("a\x00\"\\<\u2028\xff", "", true)
	f.Fuzz(func(t *testing.T, text, structured string, isError bool) {
		id, _ := jsonrpc.MakeID(float64(1))
		res := func() sdk.Result {
			c := &sdk.CallToolResult{IsError: isError, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
			if structured != "" {
				c.StructuredContent = json.RawMessage(structured)
			}
			return completed{c}
		}
		// Taken when valid as gjson reads it (as the engine's output is
		// shaped): checkCompleted holds it to encoding/json's reading.
		valid := structured == "" || gjson.Valid(structured) && !strings.Contains(structured, "\n")
		checkCompleted(t, id, res, valid)
	})
}

// BenchmarkClientDecodesAnswer is what the go-sdk client (the runner's,
// issue 47 point 4) spends reading a tools/call's answer as the engine
// writes it (encodeAnswer, the runner's upstream body as the output),
// beside the same answer without its structured content, without the
// server named in its _meta, and with the text block alone, as the
// hand-written relay answers: jsonrpc.DecodeMessage, then the result's
// UnmarshalJSON, as the client's connection and CallTool read it. The
// difference is work on the client's side of a call, out of the engine's
// reach but in the runner's process (docs/benchmarks.md, the seventh
// pass):
//
//	go test -run '^$' -bench ClientDecodesAnswer -benchmem ./engine/mcpserver/
func BenchmarkClientDecodesAnswer(b *testing.B) {
	output := json.RawMessage(`{"Status":"200","Result":[{"Name":"北京字节跳动科技有限公司","OperName":"张利东","StartDate":"2012-03-09"}]}`)
	id, err := jsonrpc.MakeID(float64(3))
	if err != nil {
		b.Fatal(err)
	}
	engineAnswer, _ := encodeAnswer(id, completed{result(&engine.Result{OK: true, Output: output}, nil)}, nil)
	noStructured := bytes.Replace(engineAnswer, append([]byte(`,"structuredContent":`), output...), nil, 1)
	noMeta := bytes.Replace(engineAnswer, append(append([]byte(`"_meta":`), serverInfoMeta...), ','), nil, 1)
	textOnly := bytes.Replace(noMeta, append([]byte(`,"structuredContent":`), output...), nil, 1)
	for _, c := range []struct {
		name   string
		answer []byte
	}{{"engine", engineAnswer}, {"no structuredContent", noStructured}, {"no _meta", noMeta}, {"text only", textOnly}} {
		if c.name != "engine" && bytes.Equal(c.answer, engineAnswer) {
			b.Fatalf("%s: the answer was not changed: %s", c.name, engineAnswer)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				msg, err := jsonrpc.DecodeMessage(c.answer)
				if err != nil {
					b.Fatal(err)
				}
				var res sdk.CallToolResult
				if err := res.UnmarshalJSON(msg.(*jsonrpc.Response).Result); err != nil || len(res.Content) != 1 {
					b.Fatalf("%s: %v %+v", c.answer, err, res)
				}
			}
		})
	}
}
