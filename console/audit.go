package console

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/store"
)

// maxAuditBody is how much of a request's body the log reads: enough
// for the names and values of every change but a pasted document's.
const maxAuditBody = 64 << 10

// audited records each successful change made through next, from the
// console or with a bearer token: who (the token's role and user), what
// in words (api.DescribeChange: the object and the values that are not
// secret) and when. An import's dry run changes nothing and is not
// recorded; a decision is recorded once per item it decided.
func (c *Console) audited(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := api.AuditKind(r.Method, r.URL.Path)
		if kind == "" {
			next.ServeHTTP(w, r)
			return
		}
		body := &teeBody{ReadCloser: r.Body}
		r.Body = body
		rec := &recorder{ResponseWriter: w, status: http.StatusOK, keep: kind == "import" || kind == "token", keepMax: 256}
		if kind == "token" {
			rec.keepMax = 8 << 10 // the created token's id, after its name and perms
		}
		start := time.Now().Truncate(time.Millisecond) // the database keeps milliseconds
		next.ServeHTTP(rec, r)
		if rec.status/100 != 2 || kind == "import" && !rec.changed() {
			return
		}
		who, err := c.api.WhoIs(r)
		if err != nil {
			return // not authenticated: the route refused it
		}
		via := "api"
		if r.Header.Get("Authorization") == "" {
			via = "console"
		}
		if kind == "decision" {
			c.decided(r.Context(), r.URL.Path, start, actorOf(who), via, rec.status)
			return
		}
		e := &store.AdminEvent{Actor: actorOf(who), Via: via, Action: r.Method, Kind: kind, Target: r.URL.Path, HTTPStatus: rec.status}
		e.SetDetail(api.DescribeChange(r.Method, r.URL.Path, body.kept, rec.lastLine(), who.UserID, r.URL.Query()))
		clear(rec.last) // a created token's answer: gone once read
		clear(rec.line)
		c.record(r.Context(), e)
	})
}

// teeBody keeps the start of a request's body as the handler reads it.
type teeBody struct {
	io.ReadCloser
	kept []byte
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if room := maxAuditBody - len(t.kept); room > 0 {
		t.kept = append(t.kept, p[:min(n, room)]...)
	}
	return n, err
}

// recorder keeps an answer's status and, for imports, the start of its
// last line: the answer itself, or a streamed import's result (or error)
// after its progress lines.
type recorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	keep        bool
	keepMax     int    // how much of a line is kept
	line        []byte // the start of the current line
	ended       bool   // the current line ended: the next byte starts another
	last        []byte // the start of the last line ended
}

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wroteHeader = true
	if r.keep {
		r.keepLines(p)
	}
	return r.ResponseWriter.Write(p)
}

func (r *recorder) keepLines(p []byte) {
	for len(p) > 0 {
		if r.ended {
			r.line, r.ended = r.line[:0], false
		}
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if n := r.keepMax - len(r.line); n > 0 {
			r.line = append(r.line, chunk[:min(len(chunk), n)]...)
		}
		if i < 0 {
			return
		}
		r.last, r.ended = append(r.last[:0], r.line...), true
		p = p[i+1:]
	}
}

// Unwrap lets http.ResponseController reach the connection (the API's
// deadlines, a streamed import's flushes).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// lastLine is the start of the answer's last line.
func (r *recorder) lastLine() []byte {
	if !r.ended {
		return r.line // an answer without a final newline
	}
	return r.last
}

// changed reports whether an import's answer may have changed something:
// all but a dry run and an error (a streamed import's status is 200
// whatever its end). What it cannot read counts as a change.
func (r *recorder) changed() bool {
	dec := json.NewDecoder(bytes.NewReader(r.lastLine()))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return true
	}
	switch key, _ := dec.Token(); key {
	case "error":
		return false
	case "dry_run":
		v, _ := dec.Token()
		return v != true
	}
	return true
}

// decided records each pending item the decision at path decided since
// start: one row a call, saying for whom, the outcome, by whom and why,
// with the digest of the exact request approved or denied (issue 33).
func (c *Console) decided(ctx context.Context, path string, start time.Time, actor, via string, status int) {
	var items []store.PendingItem
	if id, ok := strings.CutPrefix(path, "/v1/pending/"); ok {
		if it, err := c.store.GetPendingItem(ctx, id); err == nil {
			items = append(items, *it)
		}
	} else if run, ok := strings.CutPrefix(path, "/v1/runs/"); ok {
		items, _ = c.store.PendingItems(ctx, strings.TrimSuffix(run, "/resume"))
	}
	for i := range items {
		it := &items[i]
		if it.DecidedTime == nil || it.DecidedTime.Before(start) || it.Digest == "" {
			continue // not this request's decision
		}
		if it.Kind == store.KindQuestion {
			continue // recorded as the call takes the answer, whatever its route (engine.AnswerLog)
		}
		e := &store.AdminEvent{Actor: actor, Via: via, Action: it.Status, Kind: "decision", Target: path + " digest " + it.Digest, HTTPStatus: status}
		e.SetDetail(api.AuditDecision(it, actor))
		c.record(ctx, e)
	}
}
