package engine

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

const getDoc = `{"name":"t","description":"d",
 "parameters":{"type":"object","properties":{}},
 "execution":{"method":"GET","base_url":"%s/r","retry":{"max_attempts":1}}}`

func respond(status int, ct string, body []byte, hdr ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.Header()["Content-Type"] = []string{ct}
		if ct == "" {
			w.Header()["Content-Type"] = nil // no sniffing: no type at all
		}
		w.WriteHeader(status)
		w.Write(body)
	}
}

func compress(t testing.TB, enc string, s string) []byte {
	var b bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&b)
	case "zlib":
		w = zlib.NewWriter(&b)
	case "flate":
		w, _ = flate.NewWriter(&b, flate.DefaultCompression)
	}
	io.WriteString(w, s)
	w.Close()
	return b.Bytes()
}

// Issue 3, point 4: every 2xx is a success; JSON, text and binary are
// shown as such; compression is undone; select and the budget shape the
// output; failures carry the status and a bounded excerpt.
func TestResults(t *testing.T) {
	big := `[` + strings.Repeat(`{"id":12345,"name":"item"},`, 3000) + `{"id":0}]`
	tests := []struct {
		name    string
		doc     string
		handler http.HandlerFunc
		ok      bool
		status  int
		output  string // exact JSON, or prefix when ending in "…"
		code    string
		details string // substring of the error details' JSON
	}{
		{name: "200 json passes through", handler: respond(200, "application/json", []byte(`{"a": [1, 2], "b": "x"}`)),
			ok: true, status: 200, output: `{"a":[1,2],"b":"x"}`},
		{name: "201 with body", handler: respond(201, "application/json", []byte(`{"id":7}`)),
			ok: true, status: 201, output: `{"id":7}`},
		{name: "202 empty", handler: respond(202, "", nil),
			ok: true, status: 202, output: `"(no content: HTTP 202)"`},
		{name: "204", handler: respond(204, "", nil),
			ok: true, status: 204, output: `"(no content: HTTP 204)"`},
		{name: "text", handler: respond(200, "text/plain; charset=utf-8", []byte("hello <world>")),
			ok: true, status: 200, output: `"hello <world>"`},
		{name: "json labelled text/html", handler: respond(200, "text/html", []byte(`{"a":1}`)),
			ok: true, status: 200, output: `{"a":1}`},
		{name: "gbk text decoded", handler: respond(200, "text/plain; charset=gbk", []byte{0xd7, 0xd6, 0xbd, 0xda}),
			ok: true, status: 200, output: `"字节"`},
		{name: "binary described", handler: respond(200, "image/png", []byte("\x89PNG\r\n\x1a\n\x00\x00binary")),
			ok: true, status: 200, output: `{"content_type":"image/png","note":"binary content, not shown","size":16}`},
		{name: "non-UTF-8 without type", handler: respond(200, "", []byte{0xff, 0xfe, 0x00, 0x01}),
			ok: true, status: 200, output: `{"content_type":"application/octet-stream",…`},
		{name: "gzip", handler: respond(200, "application/json", compress(t, "gzip", `{"z":"gzip"}`), "Content-Encoding", "gzip"),
			ok: true, status: 200, output: `{"z":"gzip"}`},
		{name: "deflate (zlib)", handler: respond(200, "application/json", compress(t, "zlib", `{"z":"zlib"}`), "Content-Encoding", "deflate"),
			ok: true, status: 200, output: `{"z":"zlib"}`},
		{name: "deflate (raw)", handler: respond(200, "application/json", compress(t, "flate", `{"z":"raw"}`), "Content-Encoding", "deflate"),
			ok: true, status: 200, output: `{"z":"raw"}`},
		{name: "select", doc: shapeDoc(`"select":"data.items.#.name"`),
			handler: respond(200, "application/json", []byte(`{"data":{"items":[{"name":"a","x":1},{"name":"b","x":2}]},"meta":{}}`)),
			ok:      true, status: 200, output: `["a","b"]`},
		{name: "select matches nothing", doc: shapeDoc(`"select":"nope"`),
			handler: respond(200, "application/json", []byte(`{"a":1}`)), ok: true, status: 200, output: `null`},
		{name: "budget cuts an array by items", doc: shapeDoc(`"max_bytes":100`), handler: respond(200, "application/json", []byte(big)),
			ok: true, status: 200, output: `[{"id":12345,"name":"item"},{"id":12345,"name":"item"},{"id":12345,"name":"item"},"…[truncated: showing 3 of 3001 items, 81010 bytes total]"]`},
		{name: "budget cuts text", doc: shapeDoc(`"max_bytes":64`), handler: respond(200, "text/plain", []byte(strings.Repeat("字", 100))),
			ok: true, status: 200, output: `"` + strings.Repeat("字", 21) + `…[truncated: 300 bytes total]"`},
		{name: "budget makes an object a string", doc: shapeDoc(`"max_bytes":64`), handler: respond(200, "application/json", []byte(`{"k":"`+strings.Repeat("v", 100)+`"}`)),
			ok: true, status: 200, output: `"{\"k\":\"` + strings.Repeat("v", 58) + `…[truncated: 108 bytes total]"`},
		{name: "default budget", handler: respond(200, "text/plain", []byte(strings.Repeat("a", DefaultOutputBytes+1))),
			ok: true, status: 200, output: `"` + strings.Repeat("a", DefaultOutputBytes) + `…[truncated: 32769 bytes total]"`},

		{name: "404 with excerpt", handler: respond(404, "application/json", []byte(`{"error":"no such company"}`)),
			status: 404, code: CodeHTTPError, details: `"body":"{\"error\":\"no such company\"}"`},
		{name: "500 excerpt bounded", handler: respond(500, "text/plain", []byte(strings.Repeat("e", 1<<20))),
			status: 500, code: CodeHTTPError, details: strings.Repeat("e", ErrorExcerptBytes) + `…[truncated]"`},
		{name: "timeout", doc: `{"name":"t","description":"d","parameters":{"type":"object"},
		  "execution":{"method":"GET","base_url":"%s/slow","timeout_ms":50}}`,
			handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, code: CodeTimeout},
		{name: "reset", handler: func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.(*net.TCPConn).SetLinger(0) // RST, not FIN
			conn.Close()
		}, code: CodeTransportError},
		{name: "reset mid-body", handler: func(w http.ResponseWriter, r *http.Request) {
			conn, buf, _ := w.(http.Hijacker).Hijack()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"partial\":")
			buf.Flush()
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}, status: 200, code: CodeTransportError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, tt.handler)
			h := newHarness(t)
			doc := tt.doc
			if doc == "" {
				doc = getDoc
			}
			res, err := h.call(t, mustPlugin(t, doc, up.URL), `{}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != tt.ok || res.HTTPStatus != tt.status {
				t.Fatalf("ok=%v status=%d, want %v %d: %s", res.OK, res.HTTPStatus, tt.ok, tt.status, resultJSON(t, res))
			}
			if !json.Valid(res.Output) && res.Output != nil {
				t.Fatalf("output is not JSON: %s", res.Output)
			}
			if prefix, ok := strings.CutSuffix(tt.output, "…"); ok {
				if !strings.HasPrefix(string(res.Output), prefix) {
					t.Errorf("output = %s, want prefix %s", res.Output, prefix)
				}
			} else if tt.output != "" && string(res.Output) != tt.output {
				t.Errorf("output = %s\nwant     %s", res.Output, tt.output)
			}
			if tt.code == "" {
				if res.Error != nil {
					t.Fatalf("error = %+v", res.Error)
				}
				return
			}
			if res.Error == nil || res.Error.Code != tt.code {
				t.Fatalf("error = %+v, want code %s", res.Error, tt.code)
			}
			if d, _ := json.Marshal(res.Error.Details); !strings.Contains(string(d), tt.details) {
				t.Errorf("details = %s, want %s", d, tt.details)
			}
			if len(res.Output) != 0 {
				t.Errorf("failed call has output %s", res.Output)
			}
		})
	}
}

func shapeDoc(response string) string {
	return fmt.Sprintf(`{"name":"t","description":"d","parameters":{"type":"object"},
	 "execution":{"method":"GET","base_url":"%%s/r","response":{%s}}}`, response)
}

// The Accept-Encoding the engine sends itself (the transport's automatic
// decompression is off, so that the read cap counts decoded bytes).
func TestAcceptEncoding(t *testing.T) {
	up := newUpstream(t, nil)
	h := newHarness(t)
	if _, err := h.call(t, mustPlugin(t, getDoc, up.URL), `{}`, nil); err != nil {
		t.Fatal(err)
	}
	header("Accept-Encoding", "gzip, deflate")(t, up.last(t))
}
