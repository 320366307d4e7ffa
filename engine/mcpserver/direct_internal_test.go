package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzReadMeta: readMeta reads any params a client sends without
// panicking, and takes only what it may answer: a version served of the
// stateless era, a call's name as the body has it, never search_tools.
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
		got, ok := readMeta(req)
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
