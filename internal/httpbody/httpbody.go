// Package httpbody reads HTTP bodies into memory.
package httpbody

import (
	"bytes"
	"io"
)

// MaxJSON bounds every JSON request body serve reads, /mcp and
// /mcp/openapi included: the API refuses a longer one (413) and the MCP
// SDK's handlers are told the same limit (their own default is 4 MiB).
const MaxJSON = 8 << 20

// maxPresize bounds the buffer allocated up front from a declared length:
// past it the buffer grows as the bytes arrive, so that a length the
// sender declared but did not send costs nothing.
const maxPresize = 1 << 20

// ReadAll is io.ReadAll for a body whose length the sender declared
// (Content-Length; -1 when unknown): a body of the declared length, the
// common case, is read into one buffer of its size, where io.ReadAll
// starts at 512 bytes and grows by copying. The caller bounds the reader.
func ReadAll(r io.Reader, declared int64) ([]byte, error) {
	if declared < 0 || declared > maxPresize {
		return io.ReadAll(r)
	}
	// One byte more than declared, so that the read which meets the end
	// has room and needs no growth.
	b := make([]byte, 0, declared+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than declared: grow as io.ReadAll does
		}
	}
}

// Held is a JSON body read into memory already, within MaxJSON, and
// checked against jsonlimit.Messages (the API's scan, before the MCP
// handler gets it): to read again, as a reader or whole with Bytes,
// without another copy or another scan.
type Held struct {
	bytes.Reader
	b []byte
}

// Hold returns b, read and checked as Held says, as a request body.
func Hold(b []byte) *Held {
	h := &Held{b: b}
	h.Reset(b)
	return h
}

// Close does nothing: the bytes are in memory.
func (*Held) Close() error { return nil }

// Bytes returns the bytes of body when it is a Held not yet read from,
// which the caller must not change; ok false otherwise.
func Bytes(body io.Reader) (b []byte, ok bool) {
	h, ok := body.(*Held)
	if !ok || h.Len() != len(h.b) {
		return nil, false
	}
	return h.b, true
}

// Capped is body read up to max bytes: a read past them fails with
// over()'s error, and a body of exactly max bytes still ends with its own
// io.EOF (one more byte is asked for to tell the two apart).
func Capped(body io.ReadCloser, max int64, over func() error) io.ReadCloser {
	return &capped{ReadCloser: body, left: max, over: over}
}

type capped struct {
	io.ReadCloser
	left int64
	over func() error
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, err := c.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, c.over()
	}
	p = p[:min(int64(len(p)), c.left)]
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}
