package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/internal/httpbody"
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

// gjson paths of _meta's other fields (dots of the keys escaped).
const (
	metaCapabilities = `_meta.io\.modelcontextprotocol/clientCapabilities`
	metaClientInfo   = `_meta.io\.modelcontextprotocol/clientInfo`
	metaProtocol     = `_meta.io\.modelcontextprotocol/protocolVersion`
)

// serverInfo is what every result of the stateless era names in its
// _meta (SEP-2575), as the SDK's server names itself.
var serverInfo = &sdk.Implementation{Name: "blindexec", Version: "1"}

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
	method := r.Header.Get(headerMethod)
	if r.Method != http.MethodPost || (method != "tools/list" && method != "tools/call") {
		return false
	}
	if ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
		return false
	}
	if j, stream := accepts(r.Header.Values("Accept")); !j || !stream {
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpbody.MaxJSON))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
		return true
	case err != nil:
		http.Error(w, fmt.Sprintf("failed to read body: %v", err), http.StatusBadRequest)
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(body)) // for the SDK's handler, should it be the one
	req, client, ok := takeRequest(body, method, r.Header)
	if !ok {
		return false
	}
	set, err := s.current(r.Context())
	if err != nil {
		s.log.ErrorContext(r.Context(), "MCP catalog unavailable", "method", method, "err", err)
		writeAnswer(w, req.ID, nil, errCatalog)
		return true
	}
	ss := &session{svc: s, sessionOptions: sessionOptions{user: id.User, narrow: id.Narrow, principal: id.Principal,
		endpoint: r.URL.Path, stateless: true}}
	var res sdk.Result
	if method == "tools/list" {
		var list *sdk.ListToolsResult
		if list, err = ss.listFor(r.Context(), set, gjson.GetBytes(req.Params, "cursor").Str); list != nil {
			list.Meta = sdk.Meta{sdk.MetaKeyServerInfo: serverInfo}
			res = completedList{list}
		}
	} else {
		params, ok := callParams(req.Params)
		if !ok {
			return false
		}
		call := &sdk.CallToolRequest{Params: params, Extra: &sdk.RequestExtra{Header: r.Header}}
		res, err = ss.callTool(r.Context(), set, call, client)
		annotate(res)
	}
	writeAnswer(w, req.ID, res, err)
	return true
}

// takeRequest decodes body, a POST of the stateless era whose Mcp-Method
// header is method, when it is one call of method whose other headers
// and _meta are as the SDK's handler accepts them; ok false otherwise.
func takeRequest(body []byte, method string, h http.Header) (_ *jsonrpc.Request, _ peer, ok bool) {
	msg, err := decodeMessage(body)
	req, isReq := msg.(*jsonrpc.Request)
	if err != nil || !isReq || !req.IsCall() || req.Method != method || !gjson.ValidBytes(req.Params) {
		return nil, nil, false
	}
	p := gjson.ParseBytes(req.Params)
	version := p.Get(metaProtocol)
	caps := p.Get(metaCapabilities)
	if !p.IsObject() || version.Type != gjson.String || version.Str != h.Get(headerProtocol) || !caps.IsObject() {
		return nil, nil, false
	}
	if method == "tools/call" {
		name := p.Get("name")
		if name.Type != gjson.String || name.Str != h.Get(headerName) || name.Str == plugins.SearchToolsName {
			return nil, nil, false
		}
	} else if c := p.Get("cursor"); c.Exists() && c.Type != gjson.String {
		return nil, nil, false
	}
	var cc clientCapabilities
	if json.Unmarshal([]byte(caps.Raw), &cc) != nil {
		return nil, nil, false
	}
	init := &sdk.InitializeParams{ProtocolVersion: version.Str, Capabilities: &cc.ClientCapabilities}
	if info := p.Get(metaClientInfo); info.Exists() {
		if json.Unmarshal([]byte(info.Raw), &init.ClientInfo) != nil {
			return nil, nil, false
		}
	}
	return req, metaPeer{init}, true
}

// callParams are a tools/call's params as the engine reads them: its
// name, arguments, and a retry's requestState and answers (_meta is
// read by takeRequest); ok false when the SDK would not decode them.
func callParams(raw json.RawMessage) (_ *sdk.CallToolParamsRaw, ok bool) {
	f := gjson.GetManyBytes(raw, "name", "arguments", "requestState", "inputResponses")
	if f[2].Exists() || f[3].Exists() { // a retry, rare: the SDK's decoding of the answers
		var p sdk.CallToolParamsRaw
		if json.Unmarshal(raw, &p) != nil {
			return nil, false
		}
		p.Meta = nil
		return &p, true
	}
	p := &sdk.CallToolParamsRaw{Name: f[0].Str} // a string: takeRequest
	if f[1].Exists() {
		p.Arguments = json.RawMessage(f[1].Raw)
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
	return ss.list(set, cursor, usable)
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

// writeAnswer writes the JSON-RPC answer to id, as the SDK's handler
// answers a request in JSON: the result, or err as a JSON-RPC error
// (another error than *jsonrpc.Error with code 0, as the SDK encodes it)
// under the HTTP status SEP-2575 gives its code.
func writeAnswer(w http.ResponseWriter, id jsonrpc.ID, res sdk.Result, err error) {
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
	b, ok := appendResponse(nil, resp)
	if !ok {
		if b, err = jsonrpc.EncodeMessage(resp); err != nil {
			http.Error(w, "the answer could not be encoded", http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
