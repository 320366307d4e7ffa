package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// pluginView is a catalog entry as the API returns it: the protocol
// document plus the row's bookkeeping.
type pluginView struct {
	PluginID int64 `json:"plugin_id"`
	*plugins.Plugin
	CreateBy   string `json:"create_by,omitempty"`
	CreateTime string `json:"create_time,omitempty"`
	UpdateBy   string `json:"update_by,omitempty"`
	UpdateTime string `json:"update_time,omitempty"`
}

func viewOf(row *store.Plugin) (*pluginView, error) {
	p, err := row.ToPlugin()
	if err != nil {
		return nil, err
	}
	const layout = "2006-01-02 15:04:05"
	return &pluginView{
		PluginID: row.ID, Plugin: p,
		CreateBy: row.CreateBy, CreateTime: row.CreateTime.Format(layout),
		UpdateBy: row.UpdateBy, UpdateTime: row.UpdateTime.Format(layout),
	}, nil
}

func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request) {
	f := store.PluginFilter{Status: r.URL.Query().Get("status")}
	rows, err := s.Store.ListPlugins(r.Context(), f)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := make([]*pluginView, 0, len(rows))
	for i := range rows {
		v, err := viewOf(&rows[i])
		if err != nil {
			s.internal(w, r, err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"plugins": out})
}

func (s *Server) getPlugin(w http.ResponseWriter, r *http.Request) {
	row, ok := s.loadRow(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	v, err := viewOf(row)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// readPlugin parses a plugin document from the body (comments allowed) and
// checks it against the store (an MCP plugin's server).
func (s *Server) readPlugin(w http.ResponseWriter, r *http.Request) (*plugins.Plugin, bool) {
	body, ok := readJSON(w, r)
	if !ok {
		return nil, false
	}
	p, err := plugins.Parse(body)
	if err == nil {
		err = s.Store.CheckPlugin(r.Context(), p)
	}
	var ve *plugins.ValidationError
	switch {
	case errors.As(err, &ve):
		writeError(w, http.StatusBadRequest, "invalid_plugin", ve.Error(), map[string]any{"fields": ve.Fields})
		return nil, false
	case err != nil && p != nil: // the store failed
		s.internal(w, r, err)
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, "malformed_request", err.Error(), nil)
		return nil, false
	}
	return p, true
}

func (s *Server) createPlugin(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	p, ok := s.readPlugin(w, r)
	if !ok {
		return
	}
	row, err := store.RowFromPlugin(p)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	row.CreateBy, row.UpdateBy = "admin", "admin"
	err = s.Store.CreatePlugin(r.Context(), row)
	if errors.Is(err, store.ErrDuplicate) {
		writeError(w, http.StatusConflict, "duplicate", fmt.Sprintf("name: a plugin named %q exists", p.Name), nil)
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	v, err := viewOf(row)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

func (s *Server) putPlugin(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	name := r.PathValue("name")
	old, ok := s.loadRow(w, r, name)
	if !ok {
		return
	}
	p, ok := s.readPlugin(w, r)
	if !ok {
		return
	}
	if p.Name != name {
		writeError(w, http.StatusBadRequest, "invalid_plugin", fmt.Sprintf("name: %q does not match the path's %q", p.Name, name), nil)
		return
	}
	row, err := store.RowFromPlugin(p)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if p.Status == "" {
		row.Status = old.Status
	}
	row.ID, row.CreateBy, row.CreateTime, row.UpdateBy = old.ID, old.CreateBy, old.CreateTime, "admin"
	row.SourceID, row.SourceKey, row.ContentHash = old.SourceID, old.SourceKey, old.ContentHash
	if err := s.Store.UpdatePlugin(r.Context(), row); err != nil {
		s.internal(w, r, err)
		return
	}
	s.getPlugin(w, r)
}

// patchPlugin changes the status: {"status": "0"} enables, "1" disables.
func (s *Server) patchPlugin(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	var req struct {
		Status *string `json:"status"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Status == nil || (*req.Status != store.StatusEnabled && *req.Status != store.StatusDisabled) {
		writeError(w, http.StatusBadRequest, "malformed_request", `status: expected "0" (enabled) or "1" (disabled)`, nil)
		return
	}
	err := s.Store.SetPluginStatus(r.Context(), r.PathValue("name"), *req.Status, "admin")
	if errors.Is(err, store.ErrNotFound) {
		notFoundPlugin(w, r.PathValue("name"))
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.getPlugin(w, r)
}

func (s *Server) deletePlugin(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	err := s.Store.DeletePlugin(r.Context(), r.PathValue("name"))
	if errors.Is(err, store.ErrNotFound) {
		notFoundPlugin(w, r.PathValue("name"))
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) loadRow(w http.ResponseWriter, r *http.Request, name string) (*store.Plugin, bool) {
	row, err := s.Store.GetPlugin(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		notFoundPlugin(w, name)
		return nil, false
	}
	if err != nil {
		s.internal(w, r, err)
		return nil, false
	}
	return row, true
}

func notFoundPlugin(w http.ResponseWriter, name string) {
	writeError(w, http.StatusNotFound, "plugin_not_found", fmt.Sprintf("no plugin named %q", name), map[string]string{"name": name})
}

// listTools answers the OpenAI tools JSON of the enabled plugins (or of
// those named in ?names=a,b): name, description and parameters only.
func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("format") == "dynamic" && s.MCP != nil {
		s.dynamicTools(w, r, s.MCP)
		return
	}
	ps, err := s.toolPlugins(r)
	if err != nil {
		s.toolsError(w, r, err)
		return
	}
	tools := make([]plugins.Tool, 0, len(ps))
	for _, p := range ps {
		tools = append(tools, p.Tool(nil))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": tools})
}

func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	s.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, "internal", "internal error; see the engine's log", nil)
}

// rawArgs accepts arguments as a JSON object or as a string holding one
// (the form an LLM's tool call carries).
func rawArgs(raw json.RawMessage) json.RawMessage {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return json.RawMessage(s)
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// toolPlugins are the enabled plugins a tools listing covers: with ?q=,
// those matching it, best first, at most ?limit= (within ?names= when
// given); else those named in ?names=a,b (unknown names are left out);
// else all.
func (s *Server) toolPlugins(r *http.Request) ([]*plugins.Plugin, error) {
	q, limit, err := s.searchParams(r)
	if err != nil {
		return nil, err
	}
	if q != "" {
		return s.rankedTools(r, q, limit)
	}
	names := r.URL.Query().Get("names")
	if names == "" {
		return s.Catalog.EnabledPlugins(r.Context())
	}
	var out []*plugins.Plugin
	for _, name := range strings.Split(names, ",") {
		p, err := s.Catalog.Plugin(r.Context(), name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return nil, err
		case p.Enabled():
			out = append(out, p)
		}
	}
	return out, nil
}
