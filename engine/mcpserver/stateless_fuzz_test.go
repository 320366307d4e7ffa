package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/net/http/httpguts"

	"github.com/blindexec/blindexec/engine/mcpserver"
)

// FuzzStatelessPOST: whatever a 2026-07-28 client POSTs without a
// session (server/discover, subscriptions/listen, tools/list and
// tools/call with its _meta, or anything else) is answered with a status
// of the transport's and a JSON-RPC body, a listen stream within its
// wait, and the endpoint goes on serving: no request of this era's paths
// panics the handler (net/http would drop the connection) or stops it.
func FuzzStatelessPOST(f *testing.F) {
	for _, s := range [][2]string{
		{"server/discover", `{` + meta + `}`},
		{"subscriptions/listen", `{` + meta + `}`},
		{"subscriptions/listen", `{"notifications":{"toolsListChanged":true},` + meta + `}`},
		{"subscriptions/listen", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`},
		{"tools/list", `{"cursor":"x",` + meta + `}`},
		{"tools/call", `{"name":"a","arguments":{"q":"y"},` + meta + `}`},
		{"tools/call", `{"name":"a","arguments":"q","requestState":"AAAA","inputResponses":{"x":{}},` + meta + `}`},
		{"server/discover", `[]`},
		{"ping", `{` + meta + `}`},
	} {
		f.Add(s[0], s[1])
	}
	e := newErasEnv(f, mcpserver.Options{ListenPoll: 10 * time.Millisecond}, echoUpstream(f).Config.Handler.ServeHTTP, "a", "b")
	f.Fuzz(func(t *testing.T, method, params string) {
		e.t = t
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method})
		if json.Valid([]byte(params)) {
			body = append(body[:len(body)-1], `,"params":`+params+`}`...)
		}
		// The headers a client sends the method and name in, where they
		// can be a header's value; else none (the body's alone).
		hdr := map[string]string{}
		for h, v := range map[string]string{"Mcp-Method": method, "Mcp-Name": gjson.GetBytes(body, "params.name").String()} {
			if !httpguts.ValidHeaderFieldValue(v) {
				hdr[h] = ""
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		status, got := e.postContext(ctx, 7, string(body), hdr)
		cancel()
		switch status {
		case 0: // a stream held open past the wait: the listen's
		case http.StatusOK:
			if !strings.Contains(got, `"jsonrpc":"2.0"`) {
				t.Fatalf("%s: 200 %q", body, got)
			}
		case http.StatusAccepted, http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge,
			http.StatusMethodNotAllowed, http.StatusNotAcceptable, http.StatusUnsupportedMediaType:
		default:
			t.Fatalf("%s: answered %d %q", body, status, got)
		}
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta + `}}`
		if status, got := e.post(7, list, nil); status != http.StatusOK || !strings.Contains(got, `"name":"a"`) {
			t.Fatalf("after %s: tools/list answered %d %q", body, status, got)
		}
	})
}
