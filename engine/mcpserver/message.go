package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/internal/jsonlimit"
	"github.com/blindexec/blindexec/internal/jsontext"
)

// The JSON-RPC messages of the engine's transports (stdio.go,
// streamable.go): each incoming message decoded once, each successful
// response written without a second pass through encoding/json.

// decodeError is a message a transport could not take, with its JSON-RPC
// error code.
type decodeError struct {
	code int64
	msg  string
}

func (e *decodeError) Error() string { return e.msg }

// decodeMessage turns one incoming message (a stdio line, a POST body)
// into a JSON-RPC message. A request, the common case, is read with gjson
// and its params copied once; a response (to a request the server sent)
// takes the SDK's decoder. Batches, which MCP dropped in 2025-06-18, are
// refused.
func decodeMessage(line []byte) (jsonrpc.Message, error) {
	if err := checkLimits(line); err != nil {
		return nil, err
	}
	return decodeChecked(line, false)
}

// checkLimits measures a message before anything parses it: gjson, like
// every decoder, recurses per level, and a message may be 16 MiB of
// brackets.
func checkLimits(line []byte) error {
	if err := jsonlimit.Check(line, jsonlimit.Messages); err != nil {
		return &decodeError{jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()}
	}
	return nil
}

// decodeChecked is decodeMessage of a line that passed checkLimits
// already (a body the API read and checked, httpbody.Bytes, which a
// second scan would only measure again). owned says the line is the
// message's for good (a request's body, never written again): a
// request's params are then a slice of it rather than a copy (a stdio
// line's buffer is read into again).
func decodeChecked(line []byte, owned bool) (jsonrpc.Message, error) {
	if !gjson.ValidBytes(line) {
		return nil, &decodeError{jsonrpc.CodeParseError, "parse error: the message is not valid JSON"}
	}
	var v gjson.Result
	if owned {
		// Read in place, not from a copy of the whole body: only the
		// params are kept as a slice of it; the method and a string id,
		// which may outlive the request (a metric's label), are copied.
		v = gjson.Parse(unsafe.String(unsafe.SliceData(line), len(line)))
	} else {
		v = gjson.ParseBytes(line)
	}
	if v.IsArray() {
		return nil, &decodeError{jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message at a time"}
	}
	if !v.IsObject() {
		return nil, &decodeError{jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message is an object"}
	}
	var version, id, method, params gjson.Result
	v.ForEach(func(k, val gjson.Result) bool { // the last of a repeated key wins, as in encoding/json
		switch k.Str {
		case "jsonrpc":
			version = val
		case "id":
			id = val
		case "method":
			method = val
		case "params":
			params = val
		}
		return true
	})
	if !method.Exists() || !utf8.Valid(line) {
		// A response, or text the SDK's decoder mends (invalid UTF-8
		// becomes U+FFFD): both rare, both left to it.
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return nil, &decodeError{jsonrpc.CodeInvalidRequest, err.Error()}
		}
		return msg, nil
	}
	if version.Type != gjson.String || version.Str != "2.0" {
		return nil, &decodeError{jsonrpc.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`}
	}
	if method.Type != gjson.String {
		return nil, &decodeError{jsonrpc.CodeInvalidRequest, `invalid request: "method" must be a string`}
	}
	name, sid := method.Str, id.Str
	if owned {
		name, sid = methodName(name), strings.Clone(sid)
	}
	req := &jsonrpc.Request{Method: name}
	var err error
	switch id.Type {
	case gjson.Null: // absent or null: a notification
	case gjson.Number:
		if math.IsInf(id.Num, 0) {
			// Past float64, which the SDK's decoder refuses: read as
			// ±Inf it became another id, and the request was served.
			err = errors.New(`"id" is a number out of range`)
			break
		}
		req.ID, err = jsonrpc.MakeID(id.Num)
	case gjson.String:
		req.ID, err = jsonrpc.MakeID(sid)
	default:
		err = errors.New(`"id" must be a number or a string`)
	}
	if err != nil {
		return nil, &decodeError{jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()}
	}
	if params.Exists() {
		req.Params = rawOf(line, params, owned)
	}
	return req, nil
}

// methodName is m as a string of its own, not a part of the message's
// bytes: the methods of every call's path as constants, without a copy.
func methodName(m string) string {
	switch m {
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	}
	return strings.Clone(m)
}

// rawOf is v's JSON text, v read from src: a slice of src when src is
// owned (and v's position in it known), else a copy.
func rawOf(src []byte, v gjson.Result, owned bool) json.RawMessage {
	if end := v.Index + len(v.Raw); owned && v.Index > 0 && end <= len(src) && string(src[v.Index:end]) == v.Raw {
		return src[v.Index:end:end]
	}
	return json.RawMessage(v.Raw)
}

// errorLine is the JSON-RPC error answering a message that was not taken;
// it has no id, since none could be read.
func errorLine(err error) []byte {
	de := &decodeError{jsonrpc.CodeInvalidRequest, err.Error()}
	errors.As(err, &de)
	return errorResponse(jsonrpc.ID{}, de.code, de.msg, nil)
}

// errorResponse is the JSON-RPC error response to id (null when id is
// not valid: none could be read), one line.
func errorResponse(id jsonrpc.ID, code int64, msg string, data any) []byte {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id.Raw(), "error": e})
	return append(b, '\n')
}

// appendResponse appends a successful response as jsonrpc.EncodeMessage
// writes it, byte for byte (TestAppendResponse, FuzzAppendResponse),
// without running its result through encoding/json a second time: the SDK
// made the result with encoding/json (valid, compact), and EncodeMessage
// would compact it again — a pass over every byte of an answer, a third of
// what encoding a 16 kB answer costs. Anything else is not taken (false):
// an error, a request, an id that would need escaping, a result holding a
// newline (which would end the line).
func appendResponse(b []byte, msg jsonrpc.Message) ([]byte, bool) {
	r, ok := msg.(*jsonrpc.Response)
	if !ok || r.Error != nil || len(r.Result) == 0 || bytes.IndexByte(r.Result, '\n') >= 0 {
		return b, false
	}
	b = slices.Grow(b, 64+len(r.Result)) // the line's newline too
	b, ok = appendResponseHead(b, r.ID)
	if !ok {
		return b, false
	}
	b = append(b, r.Result...)
	return append(b, '}'), true
}

// appendResponseHead appends a successful response's text up to its
// result's value, as jsonrpc.EncodeMessage writes it; false (b as it
// was) for an id that would need escaping.
func appendResponseHead(b []byte, id jsonrpc.ID) ([]byte, bool) {
	n, isInt := id.Raw().(int64)
	s, isString := id.Raw().(string)
	if !isInt && !(isString && jsontext.Plain(s)) {
		return b, false
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if isInt {
		b = strconv.AppendInt(b, n, 10)
	} else {
		b = append(append(append(b, '"'), s...), '"')
	}
	return append(b, `,"result":`...), true
}
