package auth

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/blindexec/blindexec/internal/httpbody"
)

// MaskEcho masks, in resp's body, every form of the API key req carried
// (a bearer token, Azure's and others' api-key header): an operator's
// endpoint (a model, an embeddings service), or a gateway before it, may
// echo the key — in an error, whose text a client quotes, or in an
// answer — and that text would reach a caller, a log line or a stored
// run. A body is read here whole, as its client would read it (put a cap
// under it first), its read error kept; an event stream line by line, as
// it comes (a line is one field of an event: a JSON text holds no
// newline).
func MaskEcho(req *http.Request, resp *http.Response) {
	key := req.Header.Get("Api-Key")
	if bearer, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok {
		key = bearer
	}
	if key == "" || resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	m := NewMasker(key)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &maskedLines{ReadCloser: resp.Body, r: bufio.NewReader(resp.Body), m: m}
		return
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		b, err = m.Bytes(b), io.EOF
	} else {
		b = []byte(m.Cut(string(b))) // a cut may split the key
	}
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), failing{err}))
}

// EchoMasking is next with MaskEcho applied to every answer, of which at
// most max bytes are read (an event stream's lines, max each): past it, a
// read fails.
func EchoMasking(next http.RoundTripper, max int64) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return echoMasking{next, max}
}

var errTooLarge = errors.New("the answer is larger than the limit")

type echoMasking struct {
	next http.RoundTripper
	max  int64
}

func (t echoMasking) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = httpbody.Capped(resp.Body, t.max, func() error { return errTooLarge })
		MaskEcho(req, resp)
	}
	return resp, err
}

// maskedLines is a body read a line at a time, each masked.
type maskedLines struct {
	io.ReadCloser // closes the body
	r             *bufio.Reader
	m             *Masker
	line          []byte // masked, not yet read
	err           error
}

func (l *maskedLines) Read(p []byte) (int, error) {
	for len(l.line) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		var line []byte
		line, l.err = l.r.ReadBytes('\n')
		l.line = l.m.Bytes(line)
	}
	n := copy(p, l.line)
	l.line = l.line[n:]
	return n, nil
}

// failing is a reader that fails with its error (io.EOF at a body's end).
type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }
