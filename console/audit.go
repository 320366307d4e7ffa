package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/blindexec/blindexec/store"
)

// auditedRoutes are the path prefixes of the administrative changes, with
// the kind each is recorded as; the longest prefix first.
var auditedRoutes = []struct{ prefix, kind string }{
	{"/v1/runs/", "decision"},    // POST /v1/runs/{run_id}/resume: a person's decisions
	{"/v1/pending/", "decision"}, // POST /v1/pending/{id}
	{"/v1/plugins/import/", "import"},
	{"/v1/plugins", "plugin"},
	{"/v1/credentials", "credential"},
	{"/v1/tokens", "token"},
	{"/v1/mcp/servers", "mcp_server"},
	{"/v1/quotas", "quota_rule"},
}

func auditKind(r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	for _, a := range auditedRoutes {
		if strings.HasPrefix(r.URL.Path, a.prefix) {
			return a.kind
		}
	}
	return ""
}

// audited records each successful change made through next, from the
// console or with a bearer token: who (the token's role and user), what
// (method and path: names and keys, never values) and when. An import's
// dry run changes nothing and is not recorded.
func (c *Console) audited(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := auditKind(r)
		if kind == "" {
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK, keep: kind == "import"}
		start := time.Now().Truncate(time.Millisecond) // the database keeps milliseconds
		next.ServeHTTP(rec, r)
		if rec.status/100 != 2 || rec.keep && !rec.changed() {
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
		target := r.URL.Path
		if kind == "decision" {
			target = c.decided(r.Context(), target, start)
		}
		c.record(r.Context(), &store.AdminEvent{Actor: actorOf(who), Via: via, Action: r.Method, Kind: kind,
			Target: target, HTTPStatus: rec.status})
	})
}

// recorder keeps an answer's status and, for imports, the start of its
// last line: the answer itself, or a streamed import's result (or error)
// after its progress lines.
type recorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	keep        bool
	line        []byte // the start of the current line
	ended       bool   // the current line ended: the next byte starts another
	last        []byte // the start of the last line ended
}

// keepMax bounds the start of a line kept: enough for its first member,
// dry_run or error.
const keepMax = 256

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
		if n := keepMax - len(r.line); n > 0 {
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

// changed reports whether an import's answer may have changed something:
// all but a dry run and an error (a streamed import's status is 200
// whatever its end). What it cannot read counts as a change.
func (r *recorder) changed() bool {
	last := r.last
	if !r.ended {
		last = r.line // an answer without a final newline
	}
	dec := json.NewDecoder(bytes.NewReader(last))
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

// maxTarget is the length of sys_ai_admin_log.target.
const maxTarget = 512

// decided is a decision's audit target: its path and the digest of each
// pending item it decided (the exact request a person approved or
// denied, issue 33), those decided since start; as many as the column
// holds, then "…".
func (c *Console) decided(ctx context.Context, path string, start time.Time) string {
	var items []store.PendingItem
	if id, ok := strings.CutPrefix(path, "/v1/pending/"); ok {
		if it, err := c.store.GetPendingItem(ctx, id); err == nil {
			items = append(items, *it)
		}
	} else if run, ok := strings.CutPrefix(path, "/v1/runs/"); ok {
		items, _ = c.store.PendingItems(ctx, strings.TrimSuffix(run, "/resume"))
	}
	target := path
	for _, it := range items {
		if it.DecidedTime == nil || it.DecidedTime.Before(start) || it.Digest == "" {
			continue // not this request's decision
		}
		next := " digest " + it.Digest
		if len(target)+len(next) > maxTarget-len(" …") {
			return target + " …"
		}
		target += next
	}
	return target
}
