package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blindexec/blindexec/catalog"
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
	// A page of the catalog (?limit=) adds the import source and the
	// latest execution; the other answers keep the shape callers PUT back.
	SourceID     *int64     `json:"source_id,omitempty"`
	LastCallTime *time.Time `json:"last_call_time,omitempty"`
	// LoadError, on GET /v1/plugins and /v1/plugins/{name}, says why the
	// catalog left the row out (catalog.Catalog.LeftOut): no caller sees
	// or calls it until it is fixed.
	LoadError string `json:"load_error,omitempty"`
	// row is the row's name as stored, which the catalog's reasons are
	// by (the plugin's is without invisible characters).
	row string
}

// leftOut sets each view's LoadError: the rows the catalog left out.
func (s *Server) leftOut(ctx context.Context, views ...*pluginView) error {
	why, err := s.Catalog.LeftOut(ctx)
	if err != nil {
		return err
	}
	for _, v := range views {
		if err := why[v.row]; err != nil {
			v.LoadError = err.Error()
		}
	}
	return nil
}

// viewOf is the row as the administrator reads it. A row whose columns
// do not decode (a JSON column RuoYi wrote by hand) is shown by its plain
// columns, with why in LoadError (the catalog left it out for the same
// error): one bad row is neither a 500 nor hides the list.
func viewOf(row *store.Plugin) *pluginView {
	const layout = "2006-01-02 15:04:05"
	v := &pluginView{
		PluginID: row.ID, row: row.Name,
		CreateBy: row.CreateBy, CreateTime: row.CreateTime.Format(layout),
		UpdateBy: row.UpdateBy, UpdateTime: row.UpdateTime.Format(layout),
	}
	p, err := catalog.PluginFromRow(row)
	if err != nil {
		p = &plugins.Plugin{SchemaVersion: "v1", ID: row.ID, Name: row.Name, Title: row.Title, Description: row.Description,
			IconURL: row.IconURL, Status: row.Status, Remark: row.Remark, Catalog: true, Parameters: json.RawMessage(`{}`)}
		// The row's parameters when they are an object (the answer's
		// shape); LoadError says when they are not.
		var obj map[string]json.RawMessage
		if json.Unmarshal(row.ParameterSchema, &obj) == nil && obj != nil {
			p.Parameters = json.RawMessage(row.ParameterSchema)
		}
		v.LoadError = err.Error()
	}
	v.Plugin = p
	return v
}

// maxPluginPage bounds ?limit= of GET /v1/plugins.
const maxPluginPage = 500

// pluginQuery reads the filters and page of GET /v1/plugins; q is the tool
// search to rank by, limit 0 the whole list.
// pluginQuery reads GET /v1/plugins' filters and page; consequential is
// nil without ?consequential= (true or false: the plugin's effective
// class, issue 33).
func pluginQuery(r *http.Request) (f store.PluginFilter, q string, consequential *bool, err error) {
	v := r.URL.Query()
	if c := v.Get("consequential"); c != "" {
		b, err := strconv.ParseBool(c)
		if err != nil {
			return f, "", nil, &paramError{fmt.Sprintf(`consequential: %q is neither "true" nor "false"`, c)}
		}
		consequential = &b
	}
	switch f.Status = v.Get("status"); f.Status {
	case "", store.StatusEnabled, store.StatusDisabled:
	default:
		return f, "", nil, &paramError{fmt.Sprintf(`status: %q is neither "0" (enabled) nor "1" (disabled)`, f.Status)}
	}
	switch f.Type = v.Get("type"); f.Type {
	case "", plugins.TypeHTTP, plugins.TypeMCP:
	default:
		return f, "", nil, &paramError{fmt.Sprintf(`type: %q is neither "http" nor "mcp"`, f.Type)}
	}
	switch src := v.Get("source"); src {
	case "":
	case "none":
		f.NoSource = true
	default:
		id, err := strconv.ParseInt(src, 10, 64)
		if err != nil || id < 1 {
			return f, "", nil, &paramError{fmt.Sprintf(`source: %q is neither an import source's id (GET /v1/sources) nor "none"`, src)}
		}
		f.SourceID = &id
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPluginPage {
			return f, "", nil, &paramError{fmt.Sprintf("limit: %q is not a number from 1 to %d", l, maxPluginPage)}
		}
		f.Limit = n
	}
	if f.Offset, err = offsetParam(r); err != nil {
		return f, "", nil, err
	}
	return f, strings.TrimSpace(v.Get("q")), consequential, nil
}

// listPlugins answers GET /v1/plugins: the catalog by name, or with q the
// enabled plugins matching it, best first; filtered by status, source and
// type, and paged by limit and offset (the whole list without limit).
func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request) {
	f, q, consequential, err := pluginQuery(r)
	if err != nil {
		s.toolsError(w, r, err)
		return
	}
	if consequential != nil {
		if f.Names, err = s.namesByClass(r.Context(), f, *consequential); err != nil {
			s.internal(w, r, err)
			return
		}
	}
	var rows []store.Plugin
	var total int
	if q != "" {
		rows, total, err = s.searchPlugins(r, q, f)
	} else {
		rows, err = s.Store.ListPlugins(r.Context(), f)
		total = len(rows)
		if err == nil && (f.Limit > 0 || f.Offset > 0) {
			total, err = s.Store.CountPlugins(r.Context(), f)
		}
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := make([]*pluginView, 0, len(rows))
	names := make([]string, 0, len(rows))
	for i := range rows {
		v := viewOf(&rows[i])
		out = append(out, v)
		names = append(names, v.Name)
	}
	if err := s.leftOut(r.Context(), out...); err != nil {
		s.internal(w, r, err)
		return
	}
	answer := map[string]any{"plugins": out, "total": total}
	if f.Limit > 0 {
		last, err := s.Store.LastCalls(r.Context(), names)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		for i, v := range out {
			v.SourceID = rows[i].SourceID
			if t, ok := last[v.Name]; ok {
				v.LastCallTime = &t
			}
		}
		answer["limit"], answer["offset"] = f.Limit, f.Offset
	}
	writeJSON(w, http.StatusOK, answer)
}

// namesByClass lists the names of the plugins f selects whose effective
// consequential class is want: the plugin's own rule
// (plugins.Plugin.IsConsequential), not a copy of it in SQL, so the rows
// are read and parsed (an administrator's page, not a call's path).
func (s *Server) namesByClass(ctx context.Context, f store.PluginFilter, want bool) ([]string, error) {
	f.Limit, f.Offset = 0, 0
	rows, err := s.Store.ListPlugins(ctx, f)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for i := range rows {
		if p, err := catalog.PluginFromRow(&rows[i]); err == nil && p.IsConsequential() == want {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// searchPlugins returns the page f selects of the enabled plugins matching
// q and f, best first, and their number.
func (s *Server) searchPlugins(r *http.Request, q string, f store.PluginFilter) ([]store.Plugin, int, error) {
	rs, _, err := s.searchPage(r.Context(), q, 0, 0, nil)
	if err != nil {
		return nil, 0, err
	}
	ranked := make([]string, len(rs))
	for i, res := range rs {
		ranked[i] = res.Name
	}
	if f.Names != nil { // another filter's names (?consequential=)
		in := make(map[string]bool, len(f.Names))
		for _, n := range f.Names {
			in[n] = true
		}
		ranked = slices.DeleteFunc(ranked, func(n string) bool { return !in[n] })
	}
	page := f
	page.Names, page.Limit, page.Offset = ranked, 0, 0
	kept, err := s.Store.PluginNames(r.Context(), page)
	if err != nil {
		return nil, 0, err
	}
	keep := make(map[string]bool, len(kept))
	for _, n := range kept {
		keep[n] = true
	}
	ranked = slices.DeleteFunc(ranked, func(n string) bool { return !keep[n] })
	end := len(ranked)
	if f.Limit > 0 {
		end = min(end, f.Offset+f.Limit)
	}
	page.Names = ranked[min(f.Offset, end):end]
	rows, err := s.Store.ListPlugins(r.Context(), page)
	if err != nil {
		return nil, 0, err
	}
	rank := make(map[string]int, len(page.Names))
	for i, n := range page.Names {
		rank[n] = i
	}
	slices.SortFunc(rows, func(a, b store.Plugin) int { return rank[a.Name] - rank[b.Name] })
	return rows, len(ranked), nil
}

// listSources answers GET /v1/sources: the OpenAPI documents and MCP
// servers the catalog was imported from, each with its plugins' count.
func (s *Server) listSources(w http.ResponseWriter, r *http.Request) {
	sources, err := s.Store.ListImportSources(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if sources == nil {
		sources = []store.SourceSummary{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sources": sources})
}

func (s *Server) getPlugin(w http.ResponseWriter, r *http.Request) {
	row, ok := s.loadRow(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	v := viewOf(row)
	if err := s.leftOut(r.Context(), v); err != nil {
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
		err = catalog.CheckPlugin(r.Context(), s.Store, p)
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
	row, err := catalog.RowFromPlugin(p)
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
	writeJSON(w, http.StatusCreated, viewOf(row))
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
	// The import's response words are no part of the document a PUT
	// sends: kept as the row's source and content hash are, else a sync
	// of the unchanged document (which leaves the row) never restores them.
	if was, err := catalog.PluginFromRow(old); err == nil {
		p.ResponseWords = was.ResponseWords
	}
	row, err := catalog.RowFromPlugin(p)
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
		Status json.RawMessage `json:"status"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	// One message for every wrong value, a number (RuoYi's column is a
	// char) included: what is expected, and what came.
	var status string
	if json.Unmarshal(req.Status, &status) != nil || (status != store.StatusEnabled && status != store.StatusDisabled) {
		got := "nothing"
		if len(req.Status) > 0 {
			got = string(req.Status[:min(len(req.Status), 64)])
		}
		writeError(w, http.StatusBadRequest, "malformed_request", `status: expected "0" (enabled) or "1" (disabled), a string; got `+got, nil)
		return
	}
	err := s.Store.SetPluginStatus(r.Context(), r.PathValue("name"), status, "admin")
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
// Without q, limit and offset page them by name; total counts them all.
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
	total := len(ps)
	if q := r.URL.Query(); q.Get("q") == "" && (q.Has("limit") || q.Has("offset")) {
		_, limit, err := s.searchParams(r) // the same limit, with q or without
		var offset int
		if err == nil {
			offset, err = offsetParam(r)
		}
		if err != nil {
			s.toolsError(w, r, err)
			return
		}
		ps = ps[min(offset, total):min(offset+limit, total)]
	}
	tools := make([]listedTool, 0, len(ps))
	for _, p := range ps {
		tools = append(tools, listedTool{Tool: p.Tool(nil), Title: p.Title, Consequential: p.IsConsequential()})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": tools, "total": total})
}

// listedTool is a tool of GET /v1/tools: the OpenAI tool object, with
// the engine's classification beside function, not in it — callers
// forward the function object to models, which must not read it as an
// instruction.
type listedTool struct {
	plugins.Tool
	// Title is for people (the console's Approvals); a model reads the
	// function object only.
	Title         string `json:"title,omitempty"`
	Consequential bool   `json:"consequential"`
}

func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	s.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	// A rule whose state is in the database (a confirmation, a question,
	// a pending item) failed closed because it is unreachable: say so,
	// as the routes past the outage grace do, not "internal" — the
	// caller retries later rather than report a bug.
	// A COMMIT whose answer was lost may have committed: the caller reads
	// the write back before sending it again, rather than retry blindly
	// (no Retry-After).
	if errors.Is(err, store.ErrCommitOutcomeUnknown) {
		writeError(w, http.StatusServiceUnavailable, "commit_outcome_unknown", "the database stopped answering as this request's write was committed: it may have been done or not; read it back before sending the request again", nil)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Second)
	defer cancel()
	if s.Store != nil && s.Store.Ping(ctx) != nil {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", "the database cannot be reached at the moment, so this request was not completed; retry later", nil)
		return
	}
	writeError(w, http.StatusInternalServerError, "internal", "internal error; see the engine's log", nil)
}

// rawArgs accepts arguments as a JSON object or as a string holding one
// (the form an LLM's tool call carries). A string holding anything else
// is passed on as the string it is, for the decision to say so.
func rawArgs(raw json.RawMessage) json.RawMessage {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if t := strings.TrimSpace(s); t == "" || t == "null" || t[0] == '{' {
				return json.RawMessage(s)
			}
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
		ps, err := s.Catalog.EnabledPlugins(r.Context())
		if err != nil {
			return nil, err
		}
		return s.usable(r.Context(), agentParam(r), ps)
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
	return s.usable(r.Context(), agentParam(r), out)
}
