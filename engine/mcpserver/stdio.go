package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
	// take, when set, is offered each request first: true when it
	// answered it (with the write it is given), false to pass it on.
	take func(req *jsonrpc.Request, write func([]byte) error) bool
}

// Connect starts reading lines.
func (t *lineTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{w: t.w, r: t.r, take: t.take, incoming: make(chan jsonrpc.Message), closed: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// lineConn is one lineTransport connection. A goroutine reads, so that
// Close unblocks a Read waiting on a stdin that cannot be interrupted.
type lineConn struct {
	r        io.ReadCloser
	take     func(*jsonrpc.Request, func([]byte) error) bool
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
			msg, derr := decodeMessage(line)
			if derr != nil {
				// The peer gets told, as JSON-RPC asks, and may go on.
				if werr := c.writeRaw(errorLine(derr)); werr != nil {
					c.err = werr
					return
				}
			} else if req, ok := msg.(*jsonrpc.Request); !ok || c.take == nil || !c.take(req, c.writeRaw) {
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
