package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

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
	// Source names the import source (its identity) instead of the URL;
	// an inline document without one is known by its title.
	Source string `json:"source,omitempty"`
	// Force re-imports an unchanged document; Rename gives already
	// imported plugins the names the importer now derives.
	Force  bool `json:"force,omitempty"`
	Rename bool `json:"rename,omitempty"`
}

type importResponse struct {
	*openapi.SyncResult
	DryRun   bool     `json:"dry_run"`
	Partial  bool     `json:"partial"`
	Warnings []string `json:"warnings"`
}

func (s *Server) importOpenAPI(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	var req importOpenAPIRequest
	var data []byte
	location := "" // inline: the source is known by the document's title
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/json" || mt == "" {
		if !decodeBody(w, r, &req) {
			return
		}
		switch {
		case req.URL != "" && len(req.Document) > 0:
			writeError(w, http.StatusBadRequest, "malformed_request", "url, document: give one, not both", nil)
			return
		case req.URL != "":
			// Only http(s): a path would read the engine's own files.
			if !strings.HasPrefix(req.URL, "http://") && !strings.HasPrefix(req.URL, "https://") {
				writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("url: %q is not an http or https URL", req.URL), nil)
				return
			}
			b, err := openapi.Fetch(r.Context(), s.HTTPClient, req.URL)
			if err != nil {
				writeError(w, http.StatusBadGateway, "fetch_failed", err.Error(), nil)
				return
			}
			data, location = b, req.URL
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
		b, ok := readBody(w, r, openapi.MaxDocumentBytes)
		if !ok {
			return
		}
		q := r.URL.Query()
		data = b
		req = importOpenAPIRequest{Prefix: q.Get("prefix"), BaseURL: q.Get("base_url"), Tags: q["tag"],
			Methods: q["method"], Paths: q["path"], OperationIDs: q["operation_id"], DryRun: q.Get("dry_run") == "true",
			Strict: q.Get("strict") == "true", Source: q.Get("source"), Force: q.Get("force") == "true", Rename: q.Get("rename") == "true"}
		if name := q.Get("location"); name != "" {
			location = name
		}
	}
	doc, err := openapi.Load(data, cmp.Or(location, "upload"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_document", err.Error(), nil)
		return
	}
	opts := openapi.Options{Prefix: req.Prefix, BaseURL: req.BaseURL, Tags: req.Tags, Methods: req.Methods,
		Paths: req.Paths, OperationIDs: req.OperationIDs, Strict: req.Strict, Source: req.Source, Force: req.Force, Rename: req.Rename}
	if req.URL != "" {
		opts.SourceURL = req.URL
	}
	res, err := openapi.Sync(r.Context(), s.Store, location, doc, opts, req.DryRun)
	if errors.Is(err, openapi.ErrNoServer) {
		writeError(w, http.StatusBadRequest, "no_server", err.Error()+" (base_url)", nil)
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
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
