package mcprelay

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// Raw is the MCP floor without an SDK (issue 38): the JSON-RPC of
// initialize, ping, tools/list and tools/call written by hand, as a peer
// with its own small server code does, over stdio and streamable HTTP,
// making the direct call; and of 2026-07-28 (issue 47): server/discover,
// and requests without a session carrying their version in _meta,
// answered with their resultType, the Mcp-Method header checked. Nothing per call but decoding the
// request, the call and encoding its answer: no logging, no metrics, no
// locks (stdio's answers go through one writer goroutine; HTTP sessions
// are a sync.Map, read without locking once written).
type Raw struct {
	client   *http.Client
	upstream string
	sessions sync.Map // streamable HTTP: Mcp-Session-Id → struct{}
}

// NewRaw returns the hand-written relay to upstream.
func NewRaw(upstream string) *Raw {
	return &Raw{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}, upstream: upstream}
}

// rawMessage is an incoming JSON-RPC message: a request when it has an
// ID, a notification when not (responses from the client are ignored: the
// relay sends no requests).
type rawMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// stateless is the first protocol version without sessions.
const stateless = "2026-07-28"

// rawParams are the params the relay reads of every request: the
// protocol version of a request of 2026-07-28 (in _meta), and a call's.
type rawParams struct {
	Meta struct {
		Version string `json:"io.modelcontextprotocol/protocolVersion"`
	} `json:"_meta"`
	Name      string `json:"name"`
	Arguments struct {
		Keyword *string `json:"keyword"`
	} `json:"arguments"`
}

// rawTools is tools/list's result: the plugin's tool and schema.
const rawTools = `{"tools":[{"name":"` + Tool + `","description":"search","inputSchema":{"type":"object","required":["keyword"],"properties":{"keyword":{"type":"string"},"page_index":{"type":"integer","default":1}}}}]}`

// answer returns the response to m, or nil for a notification.
func (r *Raw) answer(ctx context.Context, m *rawMessage) []byte {
	if len(m.ID) == 0 || m.Method == "" {
		return nil
	}
	var p rawParams
	if len(m.Params) > 0 && m.Method != "initialize" {
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return rawError(m.ID, -32602, m.Method+": "+err.Error())
		}
	}
	var result string
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil || p.ProtocolVersion == "" {
			return rawError(m.ID, -32602, "initialize: params.protocolVersion: want a string")
		}
		result = `{"protocolVersion":` + strconv.Quote(p.ProtocolVersion) + `,"capabilities":{"tools":{}},"serverInfo":{"name":"raw-relay","version":"1"}}`
	case "server/discover":
		result = `{"supportedVersions":["` + stateless + `","2025-11-25"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"raw-relay","version":"1"}}}`
	case "ping":
		result = `{}`
	case "tools/list":
		result = rawTools
	case "tools/call":
		if p.Name != Tool {
			return rawError(m.ID, -32602, "tools/call: unknown tool "+strconv.Quote(p.Name))
		}
		if p.Arguments.Keyword == nil {
			return rawError(m.ID, -32602, "tools/call: arguments.keyword: required string")
		}
		body, err := Call(ctx, r.client, r.upstream, *p.Arguments.Keyword)
		isError := "false"
		if err != nil {
			body, isError = []byte(err.Error()), "true"
		}
		text, _ := json.Marshal(string(body))
		result = `{"content":[{"type":"text","text":` + string(text) + `}],"isError":` + isError + `}`
	default:
		return rawError(m.ID, -32601, "method not found: "+m.Method)
	}
	if p.Meta.Version >= stateless || m.Method == "server/discover" {
		result = `{"resultType":"complete",` + result[1:]
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`)
}

func rawError(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + strconv.Quote(msg) + `}}`)
}

// ServeStdio serves one session on in and out: a line each way. Calls run
// concurrently, as a client at concurrency 16 sends them; one goroutine
// writes the answers and flushes when none is waiting.
func (r *Raw) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	answers := make(chan []byte, 64)
	written := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(out, 64<<10)
		var err error
		for b := range answers {
			if err != nil {
				continue // drain so that no caller blocks
			}
			w.Write(b)
			w.WriteByte('\n')
			if len(answers) == 0 {
				err = w.Flush()
			}
		}
		if err == nil {
			err = w.Flush()
		}
		written <- err
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var calls sync.WaitGroup
	for sc.Scan() {
		m := new(rawMessage)
		if err := json.Unmarshal(sc.Bytes(), m); err != nil {
			answers <- rawError(nil, -32700, "parse error: "+err.Error())
			continue
		}
		if m.Method == "tools/call" {
			calls.Go(func() { answers <- r.answer(ctx, m) })
			continue
		}
		if b := r.answer(ctx, m); b != nil {
			answers <- b
		}
	}
	calls.Wait()
	close(answers)
	return errors.Join(sc.Err(), <-written)
}

// ServeHTTP is MCP's streamable HTTP: POST one message, answered with one
// application/json body (202 for a notification); initialize opens a
// session, DELETE closes it; no standalone event stream (GET: 405).
func (r *Raw) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	sid := req.Header.Get("Mcp-Session-Id")
	switch req.Method {
	case http.MethodPost:
	case http.MethodDelete:
		r.sessions.Delete(sid)
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var m rawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(rawError(nil, -32700, "parse error: "+err.Error()))
		return
	}
	if req.Header.Get("Mcp-Protocol-Version") >= stateless {
		// No session: the request says all, and its Mcp-Method header
		// must say what its body does.
		if h := req.Header.Get("Mcp-Method"); h != m.Method {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(rawError(m.ID, -32020, "Mcp-Method header "+strconv.Quote(h)+" does not match the body's method"))
			return
		}
	} else if m.Method == "initialize" {
		var id [16]byte
		rand.Read(id[:])
		sid = hex.EncodeToString(id[:])
		r.sessions.Store(sid, struct{}{})
		w.Header().Set("Mcp-Session-Id", sid)
	} else if _, ok := r.sessions.Load(sid); !ok {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	out := r.answer(req.Context(), &m)
	if out == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}
