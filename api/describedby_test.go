package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	legacyrouter "github.com/getkin/kin-openapi/routers/legacy"
	"github.com/tailscale/hujson"

	"github.com/blindexec/blindexec/internal/invisible"
)

// described is the description as the checks read it: loaded, valid, and
// routed on paths alone (the tests' servers listen where the
// description's server list cannot say).
var described = sync.OnceValues(func() (routers.Router, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openAPIDocument)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	// Answers that are not JSON are checked as text.
	for _, ct := range []string{"text/event-stream", "application/x-ndjson", "text/html", "application/vnd.oai.openapi"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	openapi3filter.RegisterBodyDecoder("application/vnd.oai.openapi+json", openapi3filter.JSONBodyDecoder)
	doc.Servers = nil
	return legacyrouter.NewRouter(doc)
})

// TestOpenAPIValid loads the served description and checks it as
// OpenAPI 3.1.
func TestOpenAPIValid(t *testing.T) {
	if _, err := described(); err != nil {
		t.Fatal(err)
	}
}

// CheckedHandler wraps the handler every test server of this package
// serves: each exchange is checked against the description, and t fails
// on a route, a status, a field or an error code the description does not
// have. A request the description refuses must be refused (4xx) by the
// engine too.
func CheckedHandler(t testing.TB, h http.Handler) http.Handler {
	router, err := described()
	if err != nil {
		t.Fatalf("the API description: %v", err)
	}
	// The checks run after the answer has gone, as the connection would
	// go on without them (a client still sending a refused body sees the
	// server close when it would); the test waits for them at its end.
	var checks sync.WaitGroup
	t.Cleanup(checks.Wait)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength < 0 || r.ContentLength > maxBody {
			// A body of undeclared length is cut at its limit by
			// http.MaxBytesReader, which tells the server to close the
			// connection only through the server's own ResponseWriter,
			// not a recorder around it; one declared over the limit is
			// refused unread, and its client, still sending, sees the
			// connection reset unless the answer leaves at once: both
			// served as is, unchecked.
			h.ServeHTTP(w, r)
			return
		}
		body := &teeBody{ReadCloser: r.Body}
		if r.Body != nil {
			r.Body = body
		}
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status, rec.sent = http.StatusOK, w.Header().Clone()
		}
		checks.Go(func() {
			route, err := checkExchange(router, r, body, rec)
			if err != nil {
				t.Errorf("%s %s: not as described (api/openapi.yaml): %v", r.Method, r.URL.Path, err)
				return
			}
			if route != nil && (r.ContentLength == 0 || body.complete(r.ContentLength)) {
				ct := r.Header.Get("Content-Type")
				if ct == "" && body.read.Len() > 0 {
					ct = "application/json" // as the engine reads it
				}
				recordExample(t.Name(), route, rec.status, ct, asDescribed(route.Operation, ct, body.read.Bytes()), rec)
			}
		})
	})
}

// maxCheckedBody bounds the request bodies checked against their schema:
// the hostile tests' bodies of a million elements would hold the
// connection for seconds, long enough to change what the client sees.
const maxCheckedBody = 1 << 20

// checkExchange checks one request and its answer, and says which route
// of the description it took (nil for the catch-all).
func checkExchange(router routers.Router, r *http.Request, body *teeBody, rec *recorder) (*routers.Route, error) {
	var answer struct {
		Error *Error `json:"error"`
	}
	if strings.HasPrefix(rec.sent.Get("Content-Type"), "application/json") {
		json.Unmarshal(rec.body.Bytes(), &answer)
	}
	if rec.status == http.StatusNotFound && answer.Error != nil && answer.Error.Code == "not_found" &&
		strings.HasPrefix(answer.Error.Message, "no route ") {
		return nil, nil // the catch-all: a route this server does not serve (or one it serves when a setting is on)
	}
	route, params, err := router.FindRoute(r)
	if err != nil {
		return nil, errors.New("no route of the description")
	}
	opaque := route.Operation.Extensions["x-opaque"] == true
	req := r.Clone(context.Background())
	if req.Header.Get("Content-Type") == "" && body.read.Len() > 0 {
		req.Header.Set("Content-Type", "application/json") // as the engine reads it
	}
	checkBody := !opaque && body.complete(r.ContentLength) && body.read.Len() <= maxCheckedBody
	req.Body = http.NoBody // the handler's, read and closed
	if checkBody {
		req.Body = io.NopCloser(bytes.NewReader(asDescribed(route.Operation, req.Header.Get("Content-Type"), body.read.Bytes())))
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true,
			ExcludeRequestBody: !checkBody}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && rec.status < 400 {
		return nil, errors.New("the request is not valid by the description, yet answered " + http.StatusText(rec.status) + ": " + err.Error())
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.status, Header: rec.sent,
		Body:    io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: opaque, MultiError: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return nil, err
	}
	if answer.Error == nil || opaque {
		return route, nil
	}
	resp := route.Operation.Responses.Status(rec.status)
	if resp == nil || resp.Value == nil {
		return nil, errors.New("no answer of this status") // ValidateResponse refused it already
	}
	codes, listed := errorCodes(resp.Value)
	if listed && !slices.Contains(codes, answer.Error.Code) {
		return nil, errors.New("error code " + answer.Error.Code + " is not among the codes of its status (x-error-codes " + strings.Join(codes, ", ") + ")")
	}
	return route, nil
}

// teeBody keeps what the handler read of the request body, and whether
// it read it all: a body refused unread (too large, a bad token) is not
// the description's to check.
type teeBody struct {
	io.ReadCloser
	read bytes.Buffer
	eof  bool
}

func (b *teeBody) complete(length int64) bool {
	return b.eof || (length > 0 && int64(b.read.Len()) == length)
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Write(p[:n])
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// recorder keeps the answer's status and body while passing them on; it
// unwraps for http.ResponseController (flushes, write deadlines).
type recorder struct {
	http.ResponseWriter
	status int
	sent   http.Header // as sent: a handler may change the map afterwards
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status, r.sent = code, r.Header().Clone()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status, r.sent = http.StatusOK, r.Header().Clone()
	}
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// TestTestServersChecked keeps every test server of the package
// checked: a test file's Handler() is served through CheckedHandler (a
// bare call, building the server's state, serves nothing; the handler
// the allocation counts call in-process is the engine's alone).
func TestTestServersChecked(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	// A handler kept in a variable is served checked by that name.
	bare := regexp.MustCompile(`^(?:(\w+) := )?\w+\.Handler\(\)$`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			line = strings.TrimSpace(line)
			m := bare.FindStringSubmatch(line)
			served := m != nil && (m[1] == "" || strings.Contains(string(src), "CheckedHandler(t, "+m[1]+")"))
			if strings.Contains(line, ".Handler()") && !strings.Contains(line, "CheckedHandler(") && !served {
				t.Errorf("%s:%d: serve the handler through CheckedHandler, so that what the tests exchange is checked against the description", f, i+1)
			}
		}
	}
}

// errorCodes are the codes an answer's error.code takes (x-error-codes),
// and whether it lists them.
func errorCodes(r *openapi3.Response) ([]string, bool) {
	raw, ok := r.Extensions["x-error-codes"]
	if !ok {
		return nil, false
	}
	var codes []string
	b, _ := json.Marshal(raw)
	json.Unmarshal(b, &codes)
	return codes, true
}

// asDescribed is a JSON request body as the description states it: what
// the engine reads beyond JSON's letter made plain — comments where the
// operation allows them (x-comments-allowed), invisible characters (the
// engine removes them on entry), and top-level field names in another
// case (encoding/json matches them case-insensitively).
func asDescribed(op *openapi3.Operation, contentType string, body []byte) []byte {
	if !strings.HasPrefix(contentType, "application/json") || len(body) == 0 {
		return body
	}
	if op.Extensions["x-comments-allowed"] == true {
		if std, err := hujson.Standardize(slices.Clone(body)); err == nil {
			body = std
		}
	}
	var v any
	if json.Unmarshal(body, &v) == nil {
		body, _ = json.Marshal(visible(v))
	}
	var fields map[string]json.RawMessage
	if op.RequestBody == nil || json.Unmarshal(body, &fields) != nil {
		return body
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return body
	}
	declared := mt.Schema.Value.Properties
	folded := false
	for k, v := range fields {
		if _, ok := declared[k]; ok {
			continue
		}
		for name := range declared {
			if strings.EqualFold(name, k) {
				delete(fields, k)
				fields[name], folded = v, true
				break
			}
		}
	}
	if !folded {
		return body
	}
	out, _ := json.Marshal(fields)
	return out
}

// TestCheckCatches: the check fails on what the description does not
// have — a route, a status, a field, an error code — and on a request it
// refuses that the engine accepted.
func TestCheckCatches(t *testing.T) {
	router, err := described()
	if err != nil {
		t.Fatal(err)
	}
	health := `{"status":"ok","version":"v1"}`
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		answer                   string
		want                     string // in the error; "" for none
	}{
		{"as described", "GET", "/healthz", "", 200, health, ""},
		{"the catch-all", "GET", "/v1/nothing", "", 404, `{"error":{"code":"not_found","message":"no route GET /v1/nothing"}}`, ""},
		{"a route not described", "GET", "/v1/nothing", "", 200, `{}`, "no route of the description"},
		{"a status not described", "GET", "/healthz", "", 418, health, "status is not supported"},
		{"a field not described", "GET", "/healthz", "", 200, `{"status":"ok","version":"v1","uptime":3}`, "uptime"},
		{"an error code not listed", "DELETE", "/v1/plugins/lookup", "", 404, `{"error":{"code":"gone","message":"m"}}`, "error code gone"},
		{"a listed error code", "DELETE", "/v1/plugins/lookup", "", 404, `{"error":{"code":"plugin_not_found","message":"m"}}`, ""},
		{"a refused request accepted", "PATCH", "/v1/plugins/lookup", `{"status":"2"}`, 200, `{}`, "the request is not valid"},
		{"a refused request refused", "PATCH", "/v1/plugins/lookup", `{"status":"2"}`, 400, `{"error":{"code":"malformed_request","message":"m"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			body := &teeBody{ReadCloser: r.Body}
			io.ReadAll(body)
			rec := &recorder{ResponseWriter: httptest.NewRecorder()}
			rec.Header().Set("Content-Type", "application/json; charset=utf-8")
			rec.WriteHeader(tc.status)
			io.WriteString(rec, tc.answer)
			_, err := checkExchange(router, r, body, rec)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestErrorAnswersListTheirCodes: every answer of the description that
// is the error envelope lists the codes it carries (x-error-codes), which
// the check holds the engine to.
func TestErrorAnswersListTheirCodes(t *testing.T) {
	var doc openapi3.T
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	check := func(where string, resp *openapi3.Response) {
		if resp == nil { // a reference, checked as a component
			return
		}
		mt := resp.Content.Get("application/json")
		if mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/Error" {
			return
		}
		if codes, ok := errorCodes(resp); !ok || len(codes) == 0 {
			t.Errorf("%s: the error envelope without x-error-codes", where)
		}
	}
	for name, resp := range doc.Components.Responses {
		check("components.responses."+name, resp.Value)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				check(method+" "+path+" "+status, resp.Value)
			}
		}
	}
}

// visible is v with the invisible characters of its strings removed.
func visible(v any) any {
	switch t := v.(type) {
	case string:
		s, _ := invisible.Remove(t)
		return s
	case map[string]any:
		for k, c := range t {
			t[k] = visible(c)
		}
	case []any:
		for i, c := range t {
			t[i] = visible(c)
		}
	}
	return v
}
