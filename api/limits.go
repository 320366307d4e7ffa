package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/httpbody"
	"github.com/blindexec/blindexec/internal/jsonlimit"
	"github.com/blindexec/blindexec/plugins"
)

// maxBody bounds every JSON request body the API reads: past it, 413.
const maxBody = httpbody.MaxJSON

// Error codes of refused bodies.
const (
	codeBodyTooLarge   = "body_too_large" // 413
	codeBodyTimeout    = "body_timeout"   // 408: the body did not arrive within the body deadline
	codeBodyTooComplex = "body_too_complex"
)

// readBody reads the request body, at most limit bytes. It answers 413
// past the limit, 408 when the body deadline (see deadlines.go) cut a slow
// body, 400 for any other read error.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	var body []byte
	var err error
	if r.ContentLength > limit {
		// Declared too large: refused before reading a byte.
		err = &http.MaxBytesError{Limit: limit}
		w.Header().Set("Connection", "close")
	} else {
		body, err = httpbody.ReadAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	}
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return body, true
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, codeBodyTooLarge,
			fmt.Sprintf("the body is over the limit of %d bytes", tooLarge.Limit), map[string]any{"limit": "bytes", "max": tooLarge.Limit})
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeError(w, http.StatusRequestTimeout, codeBodyTimeout, "the body did not arrive in time", nil)
	default:
		writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("read body: %v", err), nil)
	}
	return nil, false
}

// readJSON reads a JSON body (at most maxBody bytes) and scans it against
// jsonlimit.Messages before anything decodes it.
func readJSON(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, ok := readBody(w, r, maxBody)
	if !ok {
		return nil, false
	}
	if err := jsonlimit.Check(body, jsonlimit.Messages); err != nil {
		var le *jsonlimit.Error
		errors.As(err, &le)
		writeError(w, http.StatusBadRequest, codeBodyTooComplex, "body: "+err.Error(), map[string]any{"limit": le.Limit, "max": le.Max})
		return nil, false
	}
	return body, true
}

// limitDetails are the details of an error over a schema cost limit:
// which limit and its value; nil for other errors.
func limitDetails(err error) any {
	var ce *plugins.CostError
	if !errors.As(err, &ce) {
		return nil
	}
	return map[string]any{"limit": ce.Limit, "max": ce.Max}
}

// scanJSON reads and scans a JSON body as readJSON does before a handler
// that decodes the body itself (the MCP SDK's) gets it.
func scanJSON(next http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			body, ok := readJSON(w, r)
			if !ok {
				return
			}
			r.Body = httpbody.Hold(body) // the handler may take the bytes as read (httpbody.Bytes)
		}
		next.ServeHTTP(w, r)
	}
}

// tooMany answers a call or run over its user's concurrency limit: 429
// with Retry-After (whole seconds, at least 1).
func tooMany(w http.ResponseWriter, msg string, retryAfter time.Duration, details any) {
	retryLater(w, http.StatusTooManyRequests, engine.CodeRateLimited, msg, retryAfter, details)
}

// retryLater answers status with Retry-After (whole seconds, at least 1).
func retryLater(w http.ResponseWriter, status int, code, msg string, retryAfter time.Duration, details any) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(retryAfter.Seconds())))))
	writeError(w, status, code, msg, details)
}
