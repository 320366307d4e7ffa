package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
)

// An upstream's form question reaches the person with its fields in the
// order the upstream wrote them (issue 48 point 4). The SDK decodes an
// elicitation's requestedSchema into a map, which marshals back sorted;
// so a session holds the raw requestedSchema of each elicitation/create
// it reads (a request on the session, or an input request of a
// 2026-07-28 input_required result), and onElicit takes it back by
// content: the held bytes whose decoding marshals to what the SDK decoded.
// Bytes are only ever taken for the schema they decode to, so a miss (an
// entry evicted, a body not observed) shows the same schema sorted.
//
// Where the bytes are read: a streamable HTTP connection cannot be
// wrapped (the SDK tells it the session's state through an unexported
// method, which a wrapper would hide), so HTTP transports are observed in
// their response bodies (authTransport); stdio's connection is wrapped
// (heldConn).

const (
	// maxHeld bounds the schemas held per session; the oldest goes first.
	// An entry is taken when its question is asked or refused, so only
	// elicitations the SDK rejected before asking linger.
	maxHeld = 16
	// maxObserved bounds an HTTP message read for its elicitations, room
	// for a few questions of engine.MaxQuestion; a larger one (a big tool
	// result) is not read, which keeps the reading's cost bounded.
	maxObserved = 64 << 10
)

// heldSchemas are the raw requestedSchemas a session read, not yet asked.
type heldSchemas struct {
	mu   sync.Mutex
	list []heldSchema // oldest first
}

type heldSchema struct {
	canon string          // the schema decoded and marshalled again, as the SDK's is
	raw   json.RawMessage // compacted, in the upstream's order
}

// elicitParams is what see reads of an elicitation/create's params.
type elicitParams struct {
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// see holds the requestedSchemas msg carries: an elicitation/create
// request's, or those of a result's inputRequests.
func (h *heldSchemas) see(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method == "elicitation/create" {
			var p elicitParams
			if json.Unmarshal(m.Params, &p) == nil {
				h.hold(p.RequestedSchema)
			}
		}
	case *jsonrpc.Response:
		if !bytes.Contains(m.Result, []byte(`"elicitation/create"`)) {
			return
		}
		var r struct {
			InputRequests map[string]struct {
				Method string       `json:"method"`
				Params elicitParams `json:"params"`
			} `json:"inputRequests"`
		}
		if json.Unmarshal(m.Result, &r) != nil {
			return
		}
		for _, e := range r.InputRequests {
			if e.Method == "elicitation/create" {
				h.hold(e.Params.RequestedSchema)
			}
		}
	}
}

func (h *heldSchemas) hold(raw json.RawMessage) {
	if len(raw) == 0 || len(raw) > engine.MaxQuestion {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return
	}
	canon, err := json.Marshal(v)
	var compact bytes.Buffer
	if err != nil || json.Compact(&compact, raw) != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.list) == maxHeld {
		h.list = h.list[1:]
	}
	h.list = append(h.list, heldSchema{canon: string(canon), raw: compact.Bytes()})
}

// take returns (and forgets) the held bytes of schema, as the SDK decoded
// it; nil when none are held.
func (h *heldSchemas) take(schema any) json.RawMessage {
	if h == nil || schema == nil {
		return nil
	}
	canon, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, s := range h.list {
		if s.canon == string(canon) {
			h.list = append(h.list[:i:i], h.list[i+1:]...)
			return s.raw
		}
	}
	return nil
}

// heldSchemaOf takes the raw requestedSchema of p, read on cs.
func (m *Manager) heldSchemaOf(cs *sdk.ClientSession, p *sdk.ElicitParams) json.RawMessage {
	if p == nil {
		return nil
	}
	m.mu.Lock()
	var h *heldSchemas
	for _, s := range m.sessions {
		if s.cs == cs {
			h = s.held
			break
		}
	}
	m.mu.Unlock()
	return h.take(p.RequestedSchema)
}

// heldConn is a stdio connection whose incoming messages are seen.
type heldConn struct {
	sdk.Connection
	held *heldSchemas
}

func (c heldConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.held.see(msg)
	}
	return msg, err
}

// heldTransport wraps the connections of a stdio transport in heldConn.
type heldTransport struct {
	sdk.Transport
	held *heldSchemas
}

func (t heldTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return heldConn{c, t.held}, nil
}

// observe has the messages of an HTTP response body seen as the SDK reads
// them: each event of an event stream, or a JSON body whole.
func (h *heldSchemas) observe(resp *http.Response) {
	if h == nil || resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var w io.WriteCloser
	switch ct {
	case "text/event-stream":
		w = &eventReader{held: h}
	case "application/json":
		w = &jsonReader{held: h}
	default:
		return
	}
	resp.Body = &observedBody{ReadCloser: resp.Body, w: w}
}

// observedBody copies what the SDK reads of a body to w, and ends w at the
// body's end.
type observedBody struct {
	io.ReadCloser
	w    io.WriteCloser
	done bool
}

func (b *observedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.w.Write(p[:n])
	if err == io.EOF && !b.done {
		b.done = true
		b.w.Close()
	}
	return n, err
}

// seeData has data seen when it is one JSON-RPC message that mentions an
// elicitation: nothing else is decoded twice.
func (h *heldSchemas) seeData(data []byte) {
	if !bytes.Contains(data, []byte(`"elicitation/create"`)) {
		return
	}
	if msg, err := jsonrpc.DecodeMessage(data); err == nil {
		h.see(msg)
	}
}

// jsonReader sees a JSON body at its end; past maxObserved it is not read.
type jsonReader struct {
	held *heldSchemas
	buf  []byte
	over bool
}

func (r *jsonReader) Write(p []byte) (int, error) {
	if !r.over {
		if len(r.buf)+len(p) > maxObserved {
			r.over, r.buf = true, nil
		} else {
			r.buf = append(r.buf, p...)
		}
	}
	return len(p), nil
}

func (r *jsonReader) Close() error {
	if !r.over {
		r.held.seeData(r.buf)
	}
	return nil
}

// eventReader sees the data of each event of an event stream (its data
// lines joined by newlines, as the SDK reads them); an event's data past
// maxObserved is not read.
type eventReader struct {
	held *heldSchemas
	line []byte // the incomplete line
	long bool   // the line is past maxObserved: skipped to its end
	data []byte
	over bool
}

func (r *eventReader) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(r.line)+len(p) <= maxObserved {
				r.line = append(r.line, p...)
			} else { // the rest of the line is skipped, and its event
				r.line, r.long, r.over = r.line[:0], true, true
			}
			break
		}
		if !r.long {
			r.line = append(r.line, p[:i]...)
			r.endLine(bytes.TrimSuffix(r.line, []byte("\r")))
		}
		r.line, r.long, p = r.line[:0], false, p[i+1:]
	}
	return n, nil
}

func (r *eventReader) endLine(line []byte) {
	switch {
	case len(line) == 0: // the event's end
		if !r.over && len(r.data) > 0 {
			r.held.seeData(r.data)
		}
		r.data, r.over = r.data[:0], false
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
		if len(r.data)+len(v)+1 > maxObserved {
			r.over = true
		}
		if r.over {
			return
		}
		if len(r.data) == 0 { // the event's first line: its buffer becomes the data's, uncopied
			r.data, r.line = v, r.data[:0]
			return
		}
		r.data = append(append(r.data, '\n'), v...)
	}
}

func (r *eventReader) Close() error { return nil }
