package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
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
