package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/internal/header"
	"github.com/blindexec/blindexec/internal/httpbody"
	"github.com/blindexec/blindexec/internal/jsontext"
	"github.com/blindexec/blindexec/plugins"
)

// The engine's own answer to a tools/list or tools/call of the stateless
// era (issue 47 point 4). The SDK's stateless handler makes a server, a
// connection and a session for every request and reads its body five
// times on the way (docs/benchmarks.md): four times the time and five
// times the bytes of a call in a session. A request of the common shape
// — one call, its headers matching its body, its _meta well-formed — is
// decoded once here and answered by the session code the SDK's server
// would have run (session.callTool, session.list), so every rule is the
// same code: the executor's decision, quotas, records, tracing, the
// sealed requestState. Anything else (another method, search_tools,
// whose finds live in a server's registry, a header the body does not
// match, a _meta the SDK refuses) goes to the SDK's handler, which
// answers it as before: the two answer alike (TestDirectMatchesSDK).

// Headers of the stateless era that name what the body holds.
const (
	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"
)

// serverInfo is what every result of the stateless era names in its
// _meta (SEP-2575), as the SDK's server names itself.
var serverInfo = &sdk.Implementation{Name: "blindexec", Version: "1"}

// contentTypeJSON is every answer's Content-Type, one slice for all of
// them: net/http only reads it, and Header.Set made one a call.
var contentTypeJSON = []string{"application/json"}

// peer is the client a call came from: a session of the SDK's server,
// or metaPeer, what a request of the stateless era declared in its _meta.
type peer interface {
	InitializeParams() *sdk.InitializeParams
	ID() string
	Elicit(ctx context.Context, params *sdk.ElicitParams) (*sdk.ElicitResult, error)
}

// metaPeer is a client of the stateless era as one request declares it.
// There is no stream to ask it on: it is asked by input_required.
type metaPeer struct{ params *sdk.InitializeParams }

func (p metaPeer) InitializeParams() *sdk.InitializeParams { return p.params }
func (metaPeer) ID() string                                { return "" }
func (metaPeer) Elicit(context.Context, *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	return nil, errors.New("a request of the stateless era has no stream to ask on")
}

// clientCapabilities is _meta's clientCapabilities as the SDK reads it
// (its clientCapabilitiesV2): the older shape, roots beside (the shape
// of the deprecated sdk.RootCapabilities, read only to refuse what the
// SDK refuses).
type clientCapabilities struct {
	sdk.ClientCapabilities
	Roots *struct {
		ListChanged bool `json:"listChanged,omitempty"`
	} `json:"roots,omitempty"`
}

// direct answers r, a request of the stateless era for id, itself when it
// is a tools/list or tools/call it takes (true); false leaves r, its body
// intact, to the SDK's handler.
func (s *Service) direct(w http.ResponseWriter, r *http.Request, id Identity) bool {
	method := header.Get(r.Header, headerMethod)
	if r.Method != http.MethodPost || (method != "tools/list" && method != "tools/call") {
		return false
	}
	if ct, _, _ := strings.Cut(header.Get(r.Header, "Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
		return false
	}
	if j, stream := accepts(header.Values(r.Header, "Accept")); !j || !stream {
		return false
	}
	body, checked, err := heldOrRead(w, r)
	if tooLarge, ok := errors.AsType[*http.MaxBytesError](err); ok { // AsType: no pointer to escape a call
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
		return true
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("failed to read body: %v", err), http.StatusBadRequest)
		return true
	}
	msg, err := decode(body, checked)
	req, isReq := msg.(*jsonrpc.Request)
	if err != nil || !isReq || req.Method != method {
		return leave(r, body)
	}
	m, ok := readDecodedMeta(req, &s.clients)
	if !ok || m.version != header.Get(r.Header, headerProtocol) || method == "tools/call" && m.name != header.Get(r.Header, headerName) {
		return leave(r, body)
	}
	o := id.options(r.URL.Path)
	o.stateless = true
	ss := &session{svc: s, sessionOptions: o}
	res, err := ss.answer(r.Context(), req, m, r.Header)
	b, status := encodeAnswer(req.ID, res, err)
	w.Header()["Content-Type"] = contentTypeJSON
	w.WriteHeader(status)
	w.Write(b)
	return true
}

// heldOrRead is r's body: the bytes the API read and checked already
// (checked: within the same limit, and jsonlimit.Messages), else read here.
func heldOrRead(w http.ResponseWriter, r *http.Request) (body []byte, checked bool, err error) {
	if b, ok := httpbody.Bytes(r.Body); ok && len(b) <= httpbody.MaxJSON {
		return b, true, nil
	}
	body, err = httpbody.ReadAll(http.MaxBytesReader(w, r.Body, httpbody.MaxJSON), r.ContentLength)
	return body, false, err
}

// decode decodes a body heldOrRead returned, which is the request's for
// good: its params are a slice of it.
func decode(body []byte, checked bool) (jsonrpc.Message, error) {
	if !checked {
		if err := checkLimits(body); err != nil {
			return nil, err
		}
	}
	return decodeChecked(body, true)
}

// leave leaves r, whose body was read, to the SDK's handler: false, its
// body restored.
func leave(r *http.Request, body []byte) bool {
	r.Body = io.NopCloser(bytes.NewReader(body))
	return false
}

// meta is what a request of the stateless era declares: its protocol
// version, the client (_meta), and a call's tool.
type meta struct {
	version string
	client  peer
	name    string
	call    *sdk.CallToolParamsRaw // a tools/call's params
}

// readDecodedMeta reads req, a decoded request, when it is one call of
// tools/list or tools/call of the stateless era as the SDK's server
// accepts it (a _meta with the version and well-formed capabilities and
// client info; a tool's name a string, not search_tools, whose finds a
// server's registry mirrors); ok false otherwise. known holds the clients
// read before (nil: none). req is as decodeChecked (or the SDK's decoder)
// returns it, its params valid JSON already: the whole message was
// validated, and validating its params again was a walk of most of its
// bytes on every call.
func readDecodedMeta(req *jsonrpc.Request, known *clients) (_ meta, ok bool) {
	if !req.IsCall() || (req.Method != "tools/list" && req.Method != "tools/call") {
		return meta{}, false
	}
	p := gjson.ParseBytes(req.Params)
	if !p.IsObject() {
		return meta{}, false
	}
	f, ok := fields(p, "_meta", "name", "arguments", "requestState", "inputResponses", "cursor")
	if !ok || !f[0].IsObject() {
		return meta{}, false
	}
	init := known.get(f[0].Raw)
	if init == nil {
		if init, ok = readClient(f[0]); !ok {
			return meta{}, false
		}
		known.put(f[0].Raw, init)
	}
	m := meta{version: init.ProtocolVersion, client: metaPeer{init}}
	if req.Method == "tools/list" {
		if c := f[5]; c.Exists() && c.Type != gjson.String {
			return meta{}, false
		}
		return m, true
	}
	if f[1].Type != gjson.String {
		return meta{}, false
	}
	if m.call, ok = callParams(req.Params, f[1], f[2], f[3].Exists() || f[4].Exists()); !ok || m.call.Name != f[1].Str || m.call.Name == plugins.SearchToolsName {
		return meta{}, false
	}
	m.name = m.call.Name
	return m, true
}

// readClient reads the client a request's _meta declares: its version,
// capabilities and info, as the SDK's server accepts them; ok false
// otherwise.
func readClient(m gjson.Result) (_ *sdk.InitializeParams, ok bool) {
	mf, ok := fields(m, sdk.MetaKeyProtocolVersion, sdk.MetaKeyClientCapabilities, sdk.MetaKeyClientInfo)
	version, caps, info := mf[0], mf[1], mf[2]
	if !ok || version.Type != gjson.String || version.Str < firstStateless || !slices.Contains(versions, version.Str) || !caps.IsObject() {
		return nil, false
	}
	var cc clientCapabilities
	if json.Unmarshal([]byte(caps.Raw), &cc) != nil {
		return nil, false
	}
	init := &sdk.InitializeParams{ProtocolVersion: version.Str, Capabilities: &cc.ClientCapabilities}
	if info.Exists() && json.Unmarshal([]byte(info.Raw), &init.ClientInfo) != nil {
		return nil, false
	}
	return init, true
}

// clients holds the clients requests' _meta declared, by the _meta's
// text: a client sends the same _meta with every request, and decoding
// its capabilities and info through encoding/json was an eighth of the
// engine's allocations on a call's path. What it holds is only read
// (metaPeer). The zero value is ready; nil holds nothing.
type clients struct {
	mu sync.Mutex
	m  map[string]*sdk.InitializeParams
}

// Bounds of clients: the _meta texts it holds, all dropped when full (a
// client sending a _meta of its own with each request gains nothing, and
// costs a map of clientsMax entries at most), and the longest it holds.
const (
	clientsMax    = 256
	clientsKeyMax = 4 << 10
)

func (c *clients) get(meta string) *sdk.InitializeParams {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[meta]
}

func (c *clients) put(meta string, p *sdk.InitializeParams) {
	if c == nil || len(meta) > clientsKeyMax {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= clientsMax {
		c.m = make(map[string]*sdk.InitializeParams)
	}
	c.m[strings.Clone(meta)] = p
}

// maxFields is the most keys fields reads at once.
const maxFields = 6

// fields returns obj's values of keys, read as the SDK's decoder reads
// them (keys unescaped); ok false when one is repeated, which the SDK's
// decoder reads as its last and gjson's paths as its first: such a
// request is left to the SDK.
func fields(obj gjson.Result, keys ...string) (_ [maxFields]gjson.Result, ok bool) {
	var vals [maxFields]gjson.Result // an array, returned by value: no allocation a request
	if len(keys) > maxFields {
		panic("mcpserver: fields reads at most maxFields keys")
	}
	ok = true
	obj.ForEach(func(k, v gjson.Result) bool {
		if i := slices.Index(keys, k.Str); i >= 0 {
			ok = ok && !vals[i].Exists()
			vals[i] = v
		}
		return ok
	})
	return vals, ok
}

// answer answers req (read by readDecodedMeta as m) as the SDK's server would,
// header the HTTP request's (nil over stdio).
func (ss *session) answer(ctx context.Context, req *jsonrpc.Request, m meta, header http.Header) (sdk.Result, error) {
	set, err := ss.svc.current(ctx)
	if err != nil {
		ss.svc.log.ErrorContext(ctx, "MCP catalog unavailable", "method", req.Method, "err", err)
		return nil, errCatalog
	}
	if m.call == nil {
		list, err := ss.listFor(ctx, set, gjson.GetBytes(req.Params, "cursor").Str)
		if err != nil {
			return nil, err
		}
		list.Meta = sdk.Meta{sdk.MetaKeyServerInfo: serverInfo}
		return completedList{list}, nil
	}
	// The server is named in the result's _meta when it is encoded
	// (encodeAnswer).
	return ss.callTool(ctx, set, &sdk.CallToolRequest{Params: m.call, Extra: &sdk.RequestExtra{Header: header}}, m.client)
}

// lineCalls answers the requests of the stateless era a stdio connection
// reads that the engine takes (readDecodedMeta), each concurrently (callers)
// as the SDK's server runs each request, on the connection's session; a
// notifications/cancelled naming one ends it.
type lineCalls struct {
	ctx     context.Context
	ss      *session
	callers callers

	mu       sync.Mutex
	inFlight map[jsonrpc.ID]context.CancelFunc
}

// maxIdleCallers bounds the goroutines a stdio connection keeps waiting
// for its next request: more than a client's usual concurrency.
const maxIdleCallers = 32

// callers runs a stdio connection's requests on goroutines kept between
// them. A goroutine new for each request started at the runtime's
// smallest stack and grew it (growStack's zeroed frame, the stack's
// allocation and its release) on every call: 6% of `mcp serve --stdio`'s
// CPU (docs/benchmarks.md, issue 47's fifth pass). A kept one grows once
// (the GC may halve an idle one's stack, which its next call grows back).
type callers struct {
	next chan func() // unbuffered: a request is handed only to a goroutine waiting
	idle atomic.Int32
	stop chan struct{} // closed when the connection ends: the waiting ones return
}

func newCallers() callers {
	return callers{next: make(chan func()), stop: make(chan struct{})}
}

// run runs f on a waiting goroutine, or on a new one when none waits.
func (c *callers) run(f func()) {
	select {
	case c.next <- f:
	default:
		go c.serve(f)
	}
}

func (c *callers) serve(f func()) {
	growStack(0, 1) // a goroutine new for a call
	for {
		f()
		if c.idle.Add(1) > maxIdleCallers {
			c.idle.Add(-1)
			return
		}
		select {
		case f = <-c.next:
			c.idle.Add(-1)
		case <-c.stop:
			c.idle.Add(-1)
			return
		}
	}
}

// take answers req when the engine takes it (true), writing the answer's
// line with write; false leaves it to the SDK's server.
func (l *lineCalls) take(req *jsonrpc.Request, write func([]byte) error) bool {
	if req.Method == "notifications/cancelled" {
		l.cancel(req.Params) // and the SDK's server, for its own requests
		return false
	}
	m, ok := readDecodedMeta(req, &l.ss.svc.clients)
	if !ok {
		return false
	}
	ctx, cancel := context.WithCancel(l.ctx)
	l.mu.Lock()
	l.inFlight[req.ID] = cancel
	l.mu.Unlock()
	l.callers.run(func() {
		defer func() {
			l.mu.Lock()
			delete(l.inFlight, req.ID)
			l.mu.Unlock()
			cancel()
		}()
		res, err := l.ss.answer(ctx, req, m, nil)
		b, _ := encodeAnswer(req.ID, res, err)
		if werr := write(append(b, '\n')); werr != nil {
			l.ss.svc.log.WarnContext(ctx, "MCP answer not written", "err", werr)
		}
	})
	return true
}

// cancel ends the request notifications/cancelled's params name, when it
// is one of the engine's.
func (l *lineCalls) cancel(params json.RawMessage) {
	var id jsonrpc.ID
	var err error
	switch v := gjson.GetBytes(params, "requestId"); v.Type {
	case gjson.Number:
		id, err = jsonrpc.MakeID(v.Num)
	case gjson.String:
		id, err = jsonrpc.MakeID(v.Str)
	default:
		return
	}
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if cancel := l.inFlight[id]; cancel != nil {
		cancel()
	}
}

// callParams are a tools/call's params as the engine reads them: its
// name and arguments, and a retry's requestState and answers (retried:
// params has either) through the SDK's types; ok false when those would
// not decode.
func callParams(raw json.RawMessage, name, args gjson.Result, retried bool) (_ *sdk.CallToolParamsRaw, ok bool) {
	if retried { // rare: the answers decoded as the SDK decodes them
		var p sdk.CallToolParamsRaw
		if json.Unmarshal(raw, &p) != nil {
			return nil, false
		}
		p.Meta = nil
		return &p, true
	}
	p := &sdk.CallToolParamsRaw{Name: name.Str}
	if args.Exists() {
		p.Arguments = rawOf(raw, args, true) // raw is the request's params, never written again
	}
	return p, true
}

// listFor answers tools/list for the session's user.
func (ss *session) listFor(ctx context.Context, set *toolSet, cursor string) (*sdk.ListToolsResult, error) {
	usable, err := ss.usable(ctx, set)
	if err != nil {
		ss.svc.log.ErrorContext(ctx, "MCP tools not listed: the user's permissions are unreadable", "err", err)
		return nil, err
	}
	v, err := ss.view(ctx, set)
	if err != nil {
		ss.svc.log.ErrorContext(ctx, "MCP tools not listed: the user's permissions are unreadable", "err", err)
		return nil, err
	}
	ss.shown(v)
	return ss.list(set, v, cursor, usable)
}

// completedList is a tools/list result of 2026-07-28, naming its
// resultType as the SDK names its handlers' results.
type completedList struct {
	*sdk.ListToolsResult
}

func (r completedList) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.ListToolsResult)
	if err != nil {
		return nil, err
	}
	return append([]byte(`{"resultType":"complete",`), b[1:]...), nil
}

// annotate names the server in a tools/call result's _meta, as the SDK
// does every result of the stateless era.
func annotate(res sdk.Result) {
	if res == nil {
		return
	}
	m := res.GetMeta()
	if m == nil {
		m = map[string]any{}
	}
	m[sdk.MetaKeyServerInfo] = serverInfo
	res.SetMeta(m)
}

// encodeAnswer is the JSON-RPC answer to id, as the SDK's server
// encodes it: the result, or err as a JSON-RPC error (another error than
// *jsonrpc.Error with code 0), and the HTTP status SEP-2575 gives it.
func encodeAnswer(id jsonrpc.ID, res sdk.Result, err error) ([]byte, int) {
	if err == nil {
		if b, ok := appendCompleted(nil, id, res); ok {
			return b, http.StatusOK
		}
		annotate(res)
	}
	resp := &jsonrpc.Response{ID: id}
	if err == nil {
		resp.Result, err = json.Marshal(res)
	}
	status := http.StatusOK
	if err != nil {
		resp.Result, resp.Error = nil, err
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			switch je.Code {
			case jsonrpc.CodeMethodNotFound:
				status = http.StatusNotFound
			case jsonrpc.CodeInvalidParams, sdk.CodeUnsupportedProtocolVersion, sdk.CodeMissingRequiredClientCapabilities:
				status = http.StatusBadRequest
			}
		}
	}
	if b, ok := appendResponse(nil, resp); ok {
		return b, status
	}
	b, err := jsonrpc.EncodeMessage(resp)
	if err != nil { // a result that does not encode: the engine's own types always do
		b, _ = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the answer could not be encoded"}})
		status = http.StatusInternalServerError
	}
	return b, status
}

// serverInfoMeta is a result's _meta naming the server (annotate), as
// encoding/json writes it.
var serverInfoMeta = func() []byte {
	b, err := json.Marshal(sdk.Meta{sdk.MetaKeyServerInfo: serverInfo})
	if err != nil { // a constant of the SDK's types
		panic(err)
	}
	return b
}()

// appendCompleted appends the response to id whose result is res, a
// tools/call's completed result of text blocks and structured content
// the engine made (mcpserver.result), written by hand with the server
// named in its _meta: a call's answer passed through encoding/json three
// times (the result, its SDK's wire type, each block), each pass
// compacting the text the one below wrote, a third of the engine's own
// CPU on the call's path. Any other result is not taken (false, b as it
// was); the two write the same JSON (TestAppendCompleted).
func appendCompleted(b []byte, id jsonrpc.ID, res sdk.Result) ([]byte, bool) {
	c, ok := res.(completed)
	if !ok || c.CallToolResult == nil || c.Meta != nil || c.Content == nil || c.InputRequests != nil || c.RequestState != "" {
		return b, false
	}
	structured, ok := c.StructuredContent.(json.RawMessage)
	if p, isPtr := c.StructuredContent.(*json.RawMessage); isPtr && p != nil { // result's
		structured, ok = *p, true
	}
	if c.StructuredContent != nil && (!ok || !gjson.ValidBytes(structured) || bytes.IndexByte(structured, '\n') >= 0) {
		return b, false
	}
	size := 256 + len(structured)
	for _, ct := range c.Content {
		tc, ok := ct.(*sdk.TextContent)
		if !ok || tc.Meta != nil || tc.Annotations != nil {
			return b, false
		}
		size += 32 + len(tc.Text)*11/10
	}
	out, ok := appendResponseHead(slices.Grow(b, size), id)
	if !ok {
		return b, false
	}
	out = append(out, `{"resultType":"complete","_meta":`...)
	out = append(out, serverInfoMeta...)
	out = append(out, `,"content":[`...)
	for i, ct := range c.Content {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"type":"text","text":`...)
		out = jsontext.AppendString(out, ct.(*sdk.TextContent).Text)
		out = append(out, '}')
	}
	out = append(out, ']')
	if structured != nil {
		out = append(append(out, `,"structuredContent":`...), structured...)
	}
	if c.IsError {
		out = append(out, `,"isError":true`...)
	}
	return append(out, "}}"...), true
}
