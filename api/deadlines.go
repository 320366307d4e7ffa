package api

import (
	"cmp"
	"context"
	"net/http"
	"strings"
	"time"
)

// Deadlines bound how long a request may take, per kind of route. The
// server's own timeouts (cmd/blindexec: headers, idle connections, header
// bytes) cover what comes before a handler; these cover the body and the
// answer, which differ by route: server-sent events and MCP streams run
// for as long as the work does, and imports upload and convert large
// documents.
type Deadlines struct {
	// Body bounds reading a request body, from the handler's start
	// (DefaultBodyTimeout): a client sending one byte a second is cut
	// with 408 (or its connection closed) instead of holding a worker.
	Body time.Duration
	// Write bounds answering, from the handler's start
	// (DefaultWriteTimeout). The request's context ends then too, so the
	// work stops with it. Streaming routes have no write deadline.
	Write time.Duration
	// Import bounds reading and answering an import
	// (DefaultImportTimeout).
	Import time.Duration
}

// Defaults of a zero Deadlines field.
const (
	DefaultBodyTimeout   = 30 * time.Second
	DefaultWriteTimeout  = 2 * time.Minute
	DefaultImportTimeout = 10 * time.Minute
)

// routeKind sorts routes by their deadlines.
type routeKind int

const (
	kindDefault routeKind = iota
	kindStream            // answers for as long as the work goes on: no write deadline
	kindImport            // large bodies and long conversions
)

// routeKinds lists the routes that are not kindDefault, by method ("" for
// any) and path prefix.
var routeKinds = []struct {
	method, prefix string
	kind           routeKind
}{
	{"POST", "/v1/runs", kindStream}, // server-sent events when asked for; runs are bounded by runTimeout
	{"", "/mcp", kindStream},         // /mcp and /mcp/openapi: streamable HTTP, GET streams included
	{"POST", "/v1/plugins/import/", kindImport},
}

func kindOf(r *http.Request) routeKind {
	for _, k := range routeKinds {
		if (k.method == "" || k.method == r.Method) && strings.HasPrefix(r.URL.Path, k.prefix) {
			return k.kind
		}
	}
	return kindDefault
}

// withDeadlines sets the read deadline of the body and the write deadline
// of the answer of every request, per its route's kind, through
// http.ResponseController. The server clears the read deadline once the
// body is read to its end and the write deadline once the answer is done.
func (s *Server) withDeadlines(next http.Handler) http.Handler {
	body := cmp.Or(s.Deadlines.Body, DefaultBodyTimeout)
	write := cmp.Or(s.Deadlines.Write, DefaultWriteTimeout)
	imp := cmp.Or(s.Deadlines.Import, DefaultImportTimeout)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		now := time.Now()
		kind := kindOf(r)
		readBy, writeBy := now.Add(body), now.Add(write)
		switch kind {
		case kindStream:
			writeBy = time.Time{}
		case kindImport:
			readBy, writeBy = now.Add(imp), now.Add(imp)
		}
		if r.ContentLength != 0 {
			// Only a body is bounded (its length declared or chunked,
			// whatever wraps r.Body): without one the server is already
			// reading the connection in the background, to notice the
			// client leave, and a deadline there would end this
			// request's context when it passed, and the connection's,
			// so every later request on it too (a GET /mcp stream held
			// 30 s did that). Not supported by every ResponseWriter
			// (httptest's recorder): then there is no deadline to set.
			rc.SetReadDeadline(readBy)
		}
		rc.SetWriteDeadline(writeBy)
		if !writeBy.IsZero() {
			ctx, cancel := context.WithDeadline(r.Context(), writeBy)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}
