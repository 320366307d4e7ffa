// Package httpbody reads HTTP bodies into memory.
package httpbody

import "io"

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
