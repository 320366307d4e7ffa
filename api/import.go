package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/jsonlimit"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
)

// importOpenAPIRequest is the JSON form of POST /v1/plugins/import/openapi:
// the document by URL or inline (a JSON object, or a string holding JSON or
// YAML). Any other content type is the document itself (an upload), with
// the options in the query string.
type importOpenAPIRequest struct {
	URL          string          `json:"url,omitempty"`
	Document     json.RawMessage `json:"document,omitempty"`
	Prefix       string          `json:"prefix,omitempty"`
	BaseURL      string          `json:"base_url,omitempty"`
	Tags         []string        `json:"tags,omitempty"`
	Methods      []string        `json:"methods,omitempty"`
	Paths        []string        `json:"paths,omitempty"`
	OperationIDs []string        `json:"operation_ids,omitempty"`
	DryRun       bool            `json:"dry_run,omitempty"`
	Strict       bool            `json:"strict,omitempty"`
	// Consequential, when given, is the administrator's classification
	// of every plugin the import writes or keeps (issue 33): kept like
	// any other setting of theirs across later syncs.
	Consequential *bool `json:"consequential,omitempty"`
	// Source names the import source (its identity) instead of the URL;
	// an inline document without one is known by its title.
	Source string `json:"source,omitempty"`
	// Force re-imports an unchanged document; Rename gives already
	// imported plugins the names the importer now derives.
	Force  bool `json:"force,omitempty"`
	Rename bool `json:"rename,omitempty"`
}

// isImportRequest reports whether a body sent with another content type
// than JSON's is the JSON request all the same: an object naming url or
// document, which no OpenAPI document is (it has openapi or swagger).
// curl's -d sends a form's content type, and every other route reads such
// a body as JSON; here it was taken for an upload and refused as no
// OpenAPI document.
func isImportRequest(b []byte) bool {
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) || jsonlimit.Check(b, jsonlimit.Messages) != nil {
		return false
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(b, &probe) != nil || probe["openapi"] != nil || probe["swagger"] != nil {
		return false
	}
	return probe["url"] != nil || probe["document"] != nil
}

// isOpenAPIDocument reports whether a JSON body is an OpenAPI or Swagger
// document rather than the import request: it has openapi or swagger,
// and names neither url nor document.
func isOpenAPIDocument(b []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(b, &probe) != nil {
		return false
	}
	return (probe["openapi"] != nil || probe["swagger"] != nil) && probe["url"] == nil && probe["document"] == nil
}

// uploadQuery names the query parameters of an upload: its options and
// how the route answers. The JSON request's plural fields are singular
// here, one parameter a value.
var uploadQuery = []string{"prefix", "base_url", "tag", "method", "path", "operation_id",
	"dry_run", "strict", "source", "force", "rename", "location", "progress"}

// uploadFlags are uploadQuery's booleans.
var uploadFlags = []string{"dry_run", "strict", "force", "rename", "progress"}

// uploadOptions reads an upload's options from its query string. A
// parameter it does not know, and a boolean that does not parse, are
// refused naming it: ?methods=get imported every operation, and
// ?dry_run=1, read as false, wrote them.
func uploadOptions(q url.Values) (importOpenAPIRequest, error) {
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if slices.Contains(uploadQuery, name) {
			continue
		}
		if one := strings.TrimSuffix(name, "s"); one != name && slices.Contains(uploadQuery, one) {
			return importOpenAPIRequest{}, fmt.Errorf("%s: not an option of an upload; the query string takes %s, once for each value", name, one)
		}
		return importOpenAPIRequest{}, fmt.Errorf("%s: not an option of an upload (the query string takes %s)", name, strings.Join(uploadQuery, ", "))
	}
	flags := map[string]bool{}
	for _, name := range uploadFlags {
		b, err := queryBool(q, name)
		if err != nil {
			return importOpenAPIRequest{}, err
		}
		flags[name] = b
	}
	return importOpenAPIRequest{Prefix: q.Get("prefix"), BaseURL: q.Get("base_url"), Tags: q["tag"],
		Methods: q["method"], Paths: q["path"], OperationIDs: q["operation_id"], DryRun: flags["dry_run"],
		Strict: flags["strict"], Source: q.Get("source"), Force: flags["force"], Rename: flags["rename"]}, nil
}

type importResponse struct {
	// DryRun comes first: the console's audit reads it from the answer's
	// start, which a streamed answer's last line is.
	DryRun bool `json:"dry_run"`
	*importer.SyncResult
	Partial  bool     `json:"partial"`
	Warnings []string `json:"warnings"`
}

// ndjson is the media type of a streamed import's answer.
const ndjson = "application/x-ndjson"

// progressStream answers an import asking for progress (Accept:
// application/x-ndjson, or ?progress=true): from the first progress line
// on, the answer is 200 and NDJSON, one openapi.Progress a line, and
// its last line is the object the route would answer without progress
// (the result, or the error). Before the first line (a malformed request,
// a failed fetch) the answer is the usual one.
type progressStream struct {
	http.ResponseWriter
	started bool
}

func wantsProgress(r *http.Request) bool {
	progress, _ := boolParam(r, "progress")
	return progress || strings.Contains(r.Header.Get("Accept"), ndjson)
}

// send writes one progress line and flushes it.
func (p *progressStream) send(pr openapi.Progress) {
	if !p.started {
		p.started = true
		h := p.Header()
		h.Set("Content-Type", ndjson+"; charset=utf-8")
		h.Set("X-Accel-Buffering", "no") // a proxy passes each line on
		p.ResponseWriter.WriteHeader(http.StatusOK)
	}
	json.NewEncoder(p.ResponseWriter).Encode(pr)
	http.NewResponseController(p.ResponseWriter).Flush()
}

// WriteHeader is a no-op once streaming: the status was 200.
func (p *progressStream) WriteHeader(code int) {
	if !p.started {
		p.ResponseWriter.WriteHeader(code)
	}
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (p *progressStream) Unwrap() http.ResponseWriter { return p.ResponseWriter }

func (s *Server) importOpenAPI(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	var progress func(openapi.Progress)
	if wantsProgress(r) {
		ps := &progressStream{ResponseWriter: w}
		w, progress = ps, ps.send
	}
	report := func(phase string, n int) {
		if progress != nil {
			progress(openapi.Progress{Phase: phase, Done: n, Total: n})
		}
	}
	var req importOpenAPIRequest
	var data []byte
	location := "" // inline: the source is known by the document's title
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var upload []byte
	if mt == "application/json" || mt == "" {
		b, ok := readJSON(w, r)
		if !ok {
			return
		}
		if isOpenAPIDocument(b) {
			// Read as the request, its paths would be refused as "paths:
			// expected an array", which names nothing the caller did.
			writeError(w, http.StatusBadRequest, "malformed_request",
				"body: an OpenAPI document, sent as application/json, which is the import request's type: send {\"document\": <the document>}, or the document as itself with its own type (application/vnd.oai.openapi+json, application/yaml, text/plain) and the options in the query string", nil)
			return
		}
		if !decodeJSON(w, r, b, &req) {
			return
		}
	} else {
		b, ok := readBody(w, r, openapi.MaxDocumentBytes)
		if !ok {
			return
		}
		if !isImportRequest(b) {
			upload = b
		} else if !decodeJSON(w, r, b, &req) {
			return
		}
	}
	if upload == nil {
		switch {
		case req.URL != "" && len(req.Document) > 0:
			writeError(w, http.StatusBadRequest, "malformed_request", "url, document: give one, not both", nil)
			return
		case len(req.URL) > plugins.MaxURLBytes:
			writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("url: %d bytes, over the limit of %d", len(req.URL), plugins.MaxURLBytes),
				map[string]any{"limit": "url bytes", "max": plugins.MaxURLBytes})
			return
		case req.URL != "":
			// Only http(s): a path would read the engine's own files.
			if !openapi.IsURL(req.URL) {
				writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("url: %q is not an http or https URL", redact.URL(req.URL)), nil)
				return
			}
			fetched, err := importer.FetchURL(r.Context(), s.Store, s.Creds.Keyring(), req.URL, req.Source)
			if errors.Is(err, importer.ErrNoSealedURL) {
				writeError(w, http.StatusBadRequest, "malformed_request", "url: "+err.Error(), nil)
				return
			} else if err != nil {
				s.internal(w, r, err)
				return
			}
			b, err := openapi.Fetch(r.Context(), s.HTTPClient, fetched)
			if err != nil {
				writeError(w, http.StatusBadGateway, "fetch_failed", err.Error(), nil)
				return
			}
			data, location, req.URL = b, req.URL, fetched
		case len(req.Document) > 0:
			data = req.Document
			var str string
			if json.Unmarshal(req.Document, &str) == nil {
				data = []byte(str)
			}
		default:
			writeError(w, http.StatusBadRequest, "malformed_request", "url or document: required", nil)
			return
		}
	} else {
		data = upload
		var err error
		if req, err = uploadOptions(r.URL.Query()); err != nil {
			writeError(w, http.StatusBadRequest, "malformed_request", err.Error(), nil)
			return
		}
		location = r.URL.Query().Get("location")
	}
	report(openapi.PhaseFetched, len(data))
	doc, err := openapi.Load(data, cmp.Or(redact.Location(location), "upload"))
	if err != nil {
		msg := err.Error()
		if upload != nil && mt == "application/x-www-form-urlencoded" {
			// curl's -d @file sends a file so, its line breaks removed: a
			// YAML document is then one line, and its parse error names
			// nothing the caller did.
			msg += " (sent as application/x-www-form-urlencoded, as curl's -d sends a file, without its line breaks: send it with --data-binary @FILE)"
		}
		writeError(w, http.StatusBadRequest, "invalid_document", msg, nil)
		return
	}
	report(openapi.PhaseParsed, len(data))
	opts := openapi.Options{Prefix: req.Prefix, BaseURL: req.BaseURL, Tags: req.Tags, Methods: req.Methods,
		Paths: req.Paths, OperationIDs: req.OperationIDs, Strict: req.Strict, Source: req.Source, Force: req.Force, Rename: req.Rename,
		Progress: progress, MaxBytes: s.ImportMaxBytes}
	if req.URL != "" {
		opts.SourceURL = req.URL
	}
	res, err := importer.OpenAPI(r.Context(), s.Store, location, doc, opts, req.DryRun)
	if errors.Is(err, openapi.ErrNoServer) {
		writeError(w, http.StatusBadRequest, "no_server", err.Error()+" (base_url)", nil)
		return
	}
	if tl := (*openapi.TooLargeError)(nil); errors.As(err, &tl) {
		writeError(w, http.StatusBadRequest, "import_too_large", tl.Error(),
			map[string]any{"limit": "import bytes", "max": tl.Max, "operation": tl.Key})
		return
	}
	if err == nil && !req.DryRun {
		err = importer.KeepURL(r.Context(), s.Store, s.Creds.Keyring(), res.SourceID, req.URL)
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if req.Consequential != nil && !req.DryRun {
		names := slices.Concat(res.Added, res.Changed, res.Unchanged)
		if _, err := s.Store.SetPluginsConsequential(r.Context(), names, catalog.ConsequentialColumn(req.Consequential), "admin"); err != nil {
			s.internal(w, r, err)
			return
		}
		if res.Consequential == nil {
			res.Consequential = map[string]bool{}
		}
		for _, n := range names {
			res.Consequential[n] = *req.Consequential
		}
	}
	imported := len(res.Added) + len(res.Changed) + len(res.Unchanged)
	out := importResponse{SyncResult: res, DryRun: req.DryRun, Partial: len(res.Failed) > 0 && imported > 0,
		Warnings: append(doc.Warnings, res.Warnings()...)}
	status := http.StatusOK
	if !res.UpToDate && imported == 0 && len(res.Failed) > 0 {
		status = http.StatusUnprocessableEntity
	}
	writeJSON(w, status, out)
}
