package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/blindexec/blindexec/engine"
)

// schemaOf is how the SDK hands a requestedSchema to onElicit: decoded.
func schemaOf(t *testing.T, raw string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// read has the SDK read body, as resp of content type ct, in chunks of n
// bytes, through held.
func read(t *testing.T, held *heldSchemas, ct, body string, n int) {
	t.Helper()
	resp := &http.Response{Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(strings.NewReader(body))}
	held.observe(resp)
	buf := make([]byte, n)
	for {
		if _, err := resp.Body.Read(buf); err != nil {
			return
		}
	}
}

// TestHeldSchemas: the raw requestedSchema of an elicitation read in an
// HTTP body (an event stream's request, a JSON body's input_required
// result) is taken back for the schema the SDK decoded, in the upstream's
// order, once; what is not an elicitation, or too large, is not held.
func TestHeldSchemas(t *testing.T) {
	const schema = `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"},"mid":{"enum":["b","a"]}}}`
	request := `{"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{"message":"Which?","requestedSchema":` + schema + `}}`
	inputRequired := `{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{"f":{"method":"elicitation/create","params":{"message":"Which?","requestedSchema":` + schema + `}}}}}`
	tests := []struct {
		name, ct, body string
		held           bool
	}{
		{"request in an event", "text/event-stream", "event: message\nid: 1\ndata: " + request + "\n\n", true},
		{"request in an event, CRLF, data on two lines", "text/event-stream; charset=utf-8",
			"data: " + strings.Replace(request, `"params":`, "\r\ndata:\"params\":", 1) + "\r\n\r\n", true},
		{"input_required in an event", "text/event-stream", "data: " + inputRequired + "\n\n", true},
		{"input_required in a JSON body", "application/json", inputRequired, true},
		{"request in a JSON body", "application/json", request, true},
		{"an event not ended", "text/event-stream", "data: " + request + "\n", false},
		{"another method", "text/event-stream", "data: " + strings.Replace(request, "elicitation/create", "sampling/createMessage", 1) + "\n\n", false},
		{"an event too large", "text/event-stream", "data: " + request + "\ndata: " + strings.Repeat(" ", maxObserved) + "\n\n", false},
		{"a line too large, then an event", "text/event-stream", "data: " + strings.Repeat(" ", maxObserved+5000) + "\n\ndata: " + request + "\n\n", true},
		{"a schema larger than a question", "text/event-stream",
			"data: " + strings.Replace(request, `"string"`, `"string","description":"`+strings.Repeat("d", engine.MaxQuestion)+`"`, 1) + "\n\n", false},
		{"another content type", "text/plain", request, false},
	}
	for _, tc := range tests {
		for _, n := range []int{1, 7, 4096} {
			held := &heldSchemas{}
			read(t, held, tc.ct, tc.body, n)
			got := held.take(schemaOf(t, schema))
			if tc.held && string(got) != schema || !tc.held && got != nil {
				t.Errorf("%s, read by %d bytes: took %s", tc.name, n, got)
			}
			if again := held.take(schemaOf(t, schema)); again != nil {
				t.Errorf("%s: taken twice", tc.name)
			}
		}
	}

	// Only the schema the SDK decoded takes bytes; the oldest go past
	// maxHeld.
	held := &heldSchemas{}
	read(t, held, "application/json", request, 512)
	if got := held.take(schemaOf(t, `{"type":"object","properties":{"zeta":{"type":"string"}}}`)); got != nil {
		t.Errorf("another schema took %s", got)
	}
	for range maxHeld {
		read(t, held, "application/json", strings.Replace(request, "zeta", "other", 1), 512)
	}
	if got := held.take(schemaOf(t, schema)); got != nil {
		t.Errorf("held past maxHeld: %s", got)
	}
}

// FuzzEventReader: whatever an upstream's event stream holds, read in any
// chunks, only valid JSON is held, and each held schema is taken back for
// what it decodes to.
func FuzzEventReader(f *testing.F) {
	f.Add("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"elicitation/create\",\"params\":{\"requestedSchema\":{\"b\":1,\"a\":2}}}\n\n", 3)
	f.Add("data: x\r\ndata: \"elicitation/create\"\r\n\r\n\n\n", 1)
	f.Fuzz(func(t *testing.T, body string, n int) {
		if n < 1 || n > 1<<16 {
			return
		}
		held := &heldSchemas{}
		read(t, held, "text/event-stream", body, n)
		for _, s := range held.list {
			var v any
			if err := json.Unmarshal(s.raw, &v); err != nil {
				t.Fatalf("held %q: %v", s.raw, err)
			}
			if got := held.take(v); got == nil {
				t.Fatalf("%s not taken back", s.raw)
			}
		}
	})
}

// BenchmarkObserve: what reading a tool's result of 16 KiB and 1 MiB in
// an event stream costs with the body observed for elicitations, beside without,
// and beside the SDK's own decoding of that message.
func BenchmarkObserve(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20} {
		msg := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", size) + `"}]}}`
		body := "event: message\ndata: " + msg + "\n\n"
		for _, observed := range []bool{false, true} {
			name := fmt.Sprintf("%dKiB/plain", size>>10)
			if observed {
				name = fmt.Sprintf("%dKiB/observed", size>>10)
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
					if observed {
						(&heldSchemas{}).observe(resp)
					}
					io.Copy(io.Discard, struct{ io.Reader }{resp.Body})
				}
			})
		}
		b.Run(fmt.Sprintf("%dKiB/decoded by the SDK", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := jsonrpc.DecodeMessage([]byte(msg)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
