package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/blindexec/blindexec/internal/logbuf"
)

// FuzzLineReader: `mcp serve --stdio` reads what a client writes, however
// its writes arrive, as the lines it holds: each line not blank is the
// message decodeMessage reads from it alone, in order, or, where it reads
// none, one error line written back while reading goes on; the end of
// input ends reading with io.EOF. Lines longer than the reader's 64 KiB
// buffer (a seed) are gathered whole.
func FuzzLineReader(f *testing.F) {
	long := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"a":"` + strings.Repeat("y", 70<<10) + `"}}}`
	for _, s := range []struct {
		data  string
		chunk uint16
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n", 0},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\r\n\n  \n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 3},
		{"not json\n[1,2]\n{}\n" + `{"jsonrpc":"2.0","id":"a","result":{}}` + "\n", 1},
		{long + "\n" + `{"jsonrpc":"2.0","id":4,"method":"ping"}` + "\n", 4096},
		{"x" + long, 65535},
	} {
		f.Add([]byte(s.data), s.chunk)
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16) {
		var w logbuf.Buffer // what the connection writes to, read once it is done
		c, err := (&lineTransport{r: io.NopCloser(&chunked{data: data, n: int(chunk)}), w: &w}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var wantMsgs []jsonrpc.Message
		var wantErrs []byte
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if line = bytes.TrimSpace(line); len(line) == 0 {
				continue
			}
			if msg, err := decodeMessage(line); err != nil {
				wantErrs = append(wantErrs, errorLine(err)...)
			} else {
				wantMsgs = append(wantMsgs, msg)
			}
		}
		for i := 0; ; i++ {
			msg, err := c.Read(context.Background())
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("reading stopped after %d messages: %v", i, err)
				}
				if i != len(wantMsgs) {
					t.Fatalf("%d messages read, %d lines hold one", i, len(wantMsgs))
				}
				break
			}
			if i >= len(wantMsgs) || !reflect.DeepEqual(msg, wantMsgs[i]) {
				t.Fatalf("message %d read: %#v; the lines hold %d: %#v", i, msg, len(wantMsgs), wantMsgs)
			}
		}
		if got := []byte(w.String()); !bytes.Equal(got, wantErrs) {
			t.Fatalf("written back:\n%s\nwant:\n%s", got, wantErrs)
		}
	})
}

// chunked reads data n bytes at a time at most (all of it for 0), as a
// pipe hands over a client's writes.
type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	if c.n > 0 && len(p) > c.n {
		p = p[:c.n]
	}
	n := copy(p, c.data)
	c.data = c.data[n:]
	return n, nil
}
