package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/jsontext"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// ExecuteRequest is the body of POST /v1/execute: one blind call.
type ExecuteRequest struct {
	Name        string            `json:"name,omitempty"`   // a catalog plugin
	Plugin      json.RawMessage   `json:"plugin,omitempty"` // or an inline definition
	Arguments   json.RawMessage   `json:"arguments,omitempty"`
	UserID      UserID            `json:"user_id,omitempty"`
	Credentials map[string]string `json:"credentials,omitempty"`
	FixedParams map[string]any    `json:"fixed_params,omitempty"`
	// Trace asks for the request sent, masked, in the result's request:
	// the administrator's only (the console's "Try it"); any other token
	// asking is refused with 403.
	Trace bool `json:"trace,omitempty"`
	// Prepare answers the prepared request and a pending id without
	// sending; Confirmation sends the request prepared under that id
	// (issue 33).
	Prepare      bool   `json:"prepare,omitempty"`
	Confirmation string `json:"confirmation,omitempty"`
	// User is RuoYi's logged-in user, from the service or admin token
	// only: its permissions narrow what the call may use (issue 46).
	User *PayloadUser `json:"user,omitempty"`
	// Agent names the agent the call is made within (issue 46): a plugin
	// outside it is refused (403), as is an agent the user may not use;
	// an unknown agent is 404, a disabled one 409.
	Agent string `json:"agent,omitempty"`
}

func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	var req ExecuteRequest
	if !decodeStrict(w, r, &req) {
		return
	}
	user, ok := actingUser(w, r, req.UserID)
	if !ok || !fixedParamsAllowed(w, r, len(req.FixedParams) > 0) || !payloadUserAllowed(w, r, req.UserID, req.User) {
		return
	}
	if req.Trace && principalFrom(r.Context()).role != roleAdmin {
		// The request sent shows the execution config and the upstream's
		// URL, which only the administrator sees.
		writeError(w, http.StatusForbidden, "forbidden", "trace: only the administrator sees the request sent", nil)
		return
	}
	p, ok := s.resolvePlugin(w, r, req.Name, req.Plugin)
	if !ok {
		return
	}
	call := engine.Call{
		Trace:       req.Trace,
		Plugin:      p,
		Arguments:   rawArgs(req.Arguments),
		UserID:      user,
		Credentials: req.Credentials,
		FixedParams: req.FixedParams,
		Inline:      isInline(req.Plugin),
		Agent:       req.Agent,
	}
	call.Token, call.Narrow = calling(r.Context(), req.User)
	if res, err, ok := s.sendDirect(w, r, &call, req.Prepare, req.Confirmation); ok {
		writeResult(w, res, err)
	}
}

// writeResult answers an executed call with its envelope (200) and a call
// refused before anything was sent with an error (422 or 409).
func writeResult(w http.ResponseWriter, res *engine.Result, err error) {
	var refused *engine.RefusedError
	switch {
	case errors.As(err, &refused):
		if status, retryAfter, ok := refusedStatus(refused); ok {
			retryLater(w, status, refused.Code, refused.Message, retryAfter, mergeDetails(refused.Details, res.ExecutionID))
			return
		}
		status := http.StatusUnprocessableEntity
		switch refused.Code {
		case engine.CodePluginDisabled:
			status = http.StatusConflict
		case engine.CodePermissionDenied:
			status = http.StatusForbidden
		case catalog.CodeAgentNotFound:
			status = http.StatusNotFound
		case catalog.CodeAgentDisabled:
			status = http.StatusConflict
		case engine.CodeRecordsUnavailable, engine.CodeDatabaseUnavailable:
			status = http.StatusServiceUnavailable
		}
		writeError(w, status, refused.Code, refused.Message, mergeDetails(refused.Details, res.ExecutionID))
	case err != nil:
		writeError(w, http.StatusInternalServerError, "internal", err.Error(), nil)
	default:
		if b, ok := appendEnvelopeHead(make([]byte, 0, 128), res); ok {
			// The output goes out as the engine shaped it, not copied into
			// an envelope buffer: an answer-sized allocation a call fewer.
			w.Header()["Content-Type"] = jsonContentType
			w.WriteHeader(http.StatusOK)
			w.Write(b)
			if len(res.Output) == 0 {
				w.Write(jsonNull)
			} else {
				w.Write(res.Output)
			}
			w.Write(appendEnvelopeTail(b[:0], res)) // the head is written: its buffer is free
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

var (
	jsonContentType = []string{"application/json; charset=utf-8"}
	jsonNull        = []byte("null")
)

// appendEnvelopeHead and appendEnvelopeTail write the envelope of a
// successful call around its output as writeJSON would, byte for byte
// (TestAppendEnvelope), without encoding/json: its reflection over Result
// and its second compaction of Output (the engine hands Output over valid
// and compact) were 2–3% of a call's CPU at full load. A Result with an
// error or a trace is not taken (false).
func appendEnvelopeHead(b []byte, res *engine.Result) ([]byte, bool) {
	if res.Error != nil || res.Request != nil || !jsontext.Plain(res.ExecutionID) {
		return b, false
	}
	b = append(b, `{"ok":`...)
	b = strconv.AppendBool(b, res.OK)
	b = append(b, `,"http_status":`...)
	b = strconv.AppendInt(b, int64(res.HTTPStatus), 10)
	return append(b, `,"output":`...), true
}

func appendEnvelopeTail(b []byte, res *engine.Result) []byte {
	b = append(b, `,"error":null,"execution_id":"`...)
	b = append(b, res.ExecutionID...)
	b = append(b, `","latency_ms":`...)
	b = strconv.AppendInt(b, res.LatencyMS, 10)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(res.Attempts), 10)
	return append(b, "}\n"...)
}

// mergeDetails adds the execution id to a refusal's details.
func mergeDetails(d any, executionID string) any {
	out := map[string]any{"execution_id": executionID}
	switch t := d.(type) {
	case nil:
	case map[string]any:
		for k, v := range t {
			out[k] = v
		}
	default:
		out["details"] = t
	}
	return out
}

// isInline reports whether a runtime request defines its plugin itself
// (engine.Call.Inline).
func isInline(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// parseInline parses an inline plugin document, its errors named under
// field. A string where the document goes is most often a catalog plugin's
// name: the error says names go in namesField.
func parseInline(raw json.RawMessage, field, namesField string) (*plugins.Plugin, []plugins.FieldError, error) {
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
		return nil, []plugins.FieldError{{Field: field,
			Message: "got a string, want a protocol v1 document (an object); a catalog plugin is named by the field " + namesField}}, nil
	}
	p, err := plugins.ParseJSON(raw)
	var ve *plugins.ValidationError
	if !errors.As(err, &ve) {
		return p, nil, err
	}
	fields := make([]plugins.FieldError, len(ve.Fields))
	for i, f := range ve.Fields {
		fields[i] = f.Under(field)
	}
	return nil, fields, nil
}

// resolvePlugin finds the plugin of a runtime request: inline, or by name
// from the catalog.
func (s *Server) resolvePlugin(w http.ResponseWriter, r *http.Request, name string, inline json.RawMessage) (*plugins.Plugin, bool) {
	if isInline(inline) {
		p, fields, err := parseInline(inline, "plugin", "name")
		switch {
		case fields != nil:
			writeError(w, http.StatusBadRequest, "invalid_plugin", (&plugins.ValidationError{Fields: fields}).Error(), map[string]any{"fields": fields})
			return nil, false
		case err != nil:
			writeError(w, http.StatusBadRequest, "malformed_request", "plugin: "+err.Error(), nil)
			return nil, false
		}
		return p, true
	}
	if name == "" {
		writeError(w, http.StatusBadRequest, "malformed_request", "name: required (a catalog plugin), or give plugin (an inline definition)", nil)
		return nil, false
	}
	p, err := s.Catalog.Plugin(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		notFoundPlugin(w, name)
		return nil, false
	}
	if err != nil {
		s.internal(w, r, err)
		return nil, false
	}
	return p, true
}

// listExecutions answers GET /v1/executions?plugin=&user_id=&run_id=&trace_id=&since=&until=&limit=:
// a per-user token reads its own user's, and one with fixed perms those
// of the tools its perms allow (seen).
func (s *Server) listExecutions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.ExecutionFilter{PluginName: q.Get("plugin"), RunID: q.Get("run_id"), TraceID: q.Get("trace_id")}
	if v := q.Get("user_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("user_id: %q is not an integer", v), nil)
			return
		}
		f.UserID = &id
	}
	if p := principalFrom(r.Context()); p.role == roleUser {
		if f.UserID != nil && *f.UserID != p.userID {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("user_id: a per-user token sees only user %d", p.userID), nil)
			return
		}
		f.UserID = &p.userID
	}
	sn, ok := s.seenOf(w, r)
	if !ok {
		return
	}
	f.Tools = sn.toolFilter()
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(t.name); v != "" {
			tm, err := time.Parse(time.RFC3339, v)
			if err != nil {
				writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("%s: %q is not an RFC 3339 time", t.name, v), nil)
				return
			}
			*t.dst = tm
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("limit: %q is not a positive integer", v), nil)
			return
		}
		f.Limit = n
	}
	recs, err := s.Store.ListExecutions(r.Context(), f)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"executions": recs})
}

// fixedParamsAllowed refuses a payload's fixed_params from a per-user
// token (422): only the service token (RuoYi) and the administrator fill
// the parameters a tool's own fixed_params leave open (the executor checks
// which those are).
func fixedParamsAllowed(w http.ResponseWriter, r *http.Request, given bool) bool {
	if given && principalFrom(r.Context()).role == roleUser {
		writeError(w, http.StatusUnprocessableEntity, engine.CodeFixedParamsNotAllowed,
			"fixed_params: not allowed: a per-user token may not send fixed params; only the service token fills the parameters a tool's own fixed_params leave open",
			map[string]any{"field": "fixed_params"})
		return false
	}
	return true
}

// actingUser is the user a runtime request acts for (see
// principal.userFor); a token acting beyond its user answers 403.
func actingUser(w http.ResponseWriter, r *http.Request, named UserID) (int64, bool) {
	user, err := principalFrom(r.Context()).userFor(int64(named))
	if err != nil {
		writeError(w, http.StatusForbidden, "forbidden", err.Error(), nil)
		return 0, false
	}
	return user, true
}
