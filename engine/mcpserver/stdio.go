package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/internal/jsonlimit"
	"github.com/blindexec/blindexec/internal/jsontext"
)

// maxLine bounds one incoming message, as the SDK's stdio transport does
// (its DefaultMaxLineLength).
const maxLine = sdk.DefaultMaxLineLength

// lineTransport is MCP's stdio transport: one JSON-RPC message per line in
// each direction. It does what the SDK's StdioTransport does, but decodes
// each incoming request once, where it lies: the SDK's connection decodes
// every message three times (as a batch, as a message, its method again),
// each time into a fresh 32 KiB buffer — most of what a tools/call
// allocated in `mcp serve --stdio` (docs/benchmarks.md, "The SDK's own
// floor"). Batches, which MCP dropped in 2025-06-18, are answered with an
// error; a line that is not JSON is answered with a parse error and the
// connection goes on.
type lineTransport struct {
	r io.ReadCloser
	w io.Writer
}

// Connect starts reading lines.
func (t *lineTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{w: t.w, r: t.r, incoming: make(chan jsonrpc.Message), closed: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// lineConn is one lineTransport connection. A goroutine reads, so that
// Close unblocks a Read waiting on a stdin that cannot be interrupted.
type lineConn struct {
	r        io.ReadCloser
	incoming chan jsonrpc.Message
	err      error // why reading stopped, set before incoming is closed
	closed   chan struct{}
	once     sync.Once

	wmu sync.Mutex
	w   io.Writer
}

func (c *lineConn) readLoop() {
	defer close(c.incoming)
	br := bufio.NewReaderSize(c.r, 64<<10)
	var long []byte // a line longer than br's buffer, gathered
	for {
		line, err := br.ReadSlice('\n')
		if full := errors.Is(err, bufio.ErrBufferFull); full || long != nil {
			if long = append(long, line...); len(long) > maxLine {
				c.err = fmt.Errorf("an incoming message is longer than %d bytes", maxLine)
				return
			}
			if full {
				continue
			}
			line, long = long, nil
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			msg, derr := decodeLine(line)
			if derr != nil {
				// The peer gets told, as JSON-RPC asks, and may go on.
				if werr := c.writeRaw(errorLine(derr)); werr != nil {
					c.err = werr
					return
				}
			} else {
				select {
				case c.incoming <- msg:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			c.err = err // io.EOF when the client closes stdin
			return
		}
	}
}

// decodeError is a line the connection could not take, with its JSON-RPC
// error code.
type decodeError struct {
	code int64
	msg  string
}

func (e *decodeError) Error() string { return e.msg }

// decodeLine turns one line into a JSON-RPC message. A request, the
// common case, is read with gjson and its params copied once; a response
// (to a request the server sent) takes the SDK's decoder.
func decodeLine(line []byte) (jsonrpc.Message, error) {
	// Measured before anything parses it: gjson, like every decoder,
	// recurses per level, and a line may be 16 MiB of brackets.
	if err := jsonlimit.Check(line, jsonlimit.Messages); err != nil {
		return nil, &decodeError{jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()}
	}
	if !gjson.ValidBytes(line) {
		return nil, &decodeError{jsonrpc.CodeParseError, "parse error: the line is not valid JSON"}
	}
	v := gjson.ParseBytes(line)
	if v.IsArray() {
		return nil, &decodeError{jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line"}
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
	req := &jsonrpc.Request{Method: method.Str}
	var err error
	switch id.Type {
	case gjson.Null: // absent or null: a notification
	case gjson.Number:
		req.ID, err = jsonrpc.MakeID(id.Num)
	case gjson.String:
		req.ID, err = jsonrpc.MakeID(id.Str)
	default:
		err = errors.New(`"id" must be a number or a string`)
	}
	if err != nil {
		return nil, &decodeError{jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()}
	}
	if params.Exists() {
		req.Params = json.RawMessage(params.Raw)
	}
	return req, nil
}

// errorLine is the JSON-RPC error answering a line that was not taken; it
// has no id, since none could be read.
func errorLine(err error) []byte {
	de := &decodeError{jsonrpc.CodeInvalidRequest, err.Error()}
	errors.As(err, &de)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": de.code, "message": de.msg}})
	return append(b, '\n')
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msg, ok := <-c.incoming:
		if !ok {
			return nil, c.err
		}
		return msg, nil
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write sends msg as one line, with one write.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b, ok := appendResponse(nil, msg); ok {
		return c.writeRaw(append(b, '\n'))
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeRaw(append(b, '\n'))
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
	n, isInt := r.ID.Raw().(int64)
	s, isString := r.ID.Raw().(string)
	if !isInt && !(isString && jsontext.Plain(s)) {
		return b, false
	}
	b = slices.Grow(b, 64+len(r.Result)) // the line's newline too
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if isInt {
		b = strconv.AppendInt(b, n, 10)
	} else {
		b = append(append(append(b, '"'), s...), '"')
	}
	b = append(b, `,"result":`...)
	b = append(b, r.Result...)
	return append(b, '}'), true
}

func (c *lineConn) writeRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(b)
	return err
}

// Close stops reading; closing the reader unblocks the read goroutine
// where the reader allows it (a pipe does; a terminal may not).
func (c *lineConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		err = c.r.Close()
	})
	return err
}

func (c *lineConn) SessionID() string { return "" }
