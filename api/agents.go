package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// agentRoutes serves agents (issue 46): the administrator writes them;
// the service reads them; a per-user token lists those it may use.
func (s *Server) agentRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/agents", s.with(roleAdmin, s.createAgent))
	mux.HandleFunc("GET /v1/agents", s.with(roleUser, s.listAgents))
	mux.HandleFunc("GET /v1/agents/{name}", s.with(roleService, s.getAgent))
	mux.HandleFunc("PUT /v1/agents/{name}", s.with(roleAdmin, s.putAgent))
	mux.HandleFunc("DELETE /v1/agents/{name}", s.with(roleAdmin, s.deleteAgent))
}

// agentView is an agent as the API shows it: the document, its row's
// audit, and the enabled tools its selection picks now (not narrowed to
// any user).
type agentView struct {
	AgentID int64 `json:"agent_id"`
	*catalog.Agent
	ToolNames  []string `json:"tool_names"`
	CreateBy   string   `json:"create_by"`
	CreateTime string   `json:"create_time"`
	UpdateBy   string   `json:"update_by"`
	UpdateTime string   `json:"update_time"`
}

func (s *Server) viewAgent(r *http.Request, row *store.Agent) (*agentView, error) {
	a, err := catalog.AgentFromRow(row)
	if err != nil {
		return nil, err
	}
	enabled, err := s.Catalog.EnabledPlugins(r.Context())
	if err != nil {
		return nil, err
	}
	return agentViewOf(row, a, a.Tools.NamesIn(enabled)), nil
}

// agentViewOf is the view of a, read from row, holding tools.
func agentViewOf(row *store.Agent, a *catalog.Agent, tools []string) *agentView {
	if a.Status == "" {
		a.Status = store.StatusEnabled
	}
	const layout = "2006-01-02 15:04:05"
	return &agentView{AgentID: row.ID, Agent: a, ToolNames: tools,
		CreateBy: row.CreateBy, CreateTime: row.CreateTime.Format(layout),
		UpdateBy: row.UpdateBy, UpdateTime: row.UpdateTime.Format(layout)}
}

// readAgent decodes and checks an agent document.
func readAgent(w http.ResponseWriter, r *http.Request) (*catalog.Agent, bool) {
	var a catalog.Agent
	if !decodeStrict(w, r, &a) {
		return nil, false
	}
	if fields := a.Check(); len(fields) > 0 {
		writeError(w, http.StatusBadRequest, "invalid_agent", (&plugins.ValidationError{Fields: fields}).Error(), map[string]any{"fields": fields})
		return nil, false
	}
	return &a, true
}

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	a, ok := readAgent(w, r)
	if !ok {
		return
	}
	row, err := catalog.AgentRow(a)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	row.CreateBy, row.UpdateBy = "admin", "admin"
	err = s.Store.CreateAgent(r.Context(), row)
	if errors.Is(err, store.ErrDuplicate) {
		writeError(w, http.StatusConflict, "duplicate", fmt.Sprintf("name: an agent named %q exists", a.Name), nil)
		return
	}
	s.answerAgent(w, r, row, err, http.StatusCreated)
}

func (s *Server) putAgent(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	a, ok := readAgent(w, r)
	if !ok {
		return
	}
	if name := r.PathValue("name"); a.Name != name {
		writeError(w, http.StatusBadRequest, "invalid_agent", fmt.Sprintf("name: %q does not match the path's %q", a.Name, name), nil)
		return
	}
	row, err := catalog.AgentRow(a)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	row.UpdateBy = "admin"
	if err = s.Store.UpdateAgent(r.Context(), row); err == nil {
		row, err = s.Store.GetAgent(r.Context(), a.Name)
	}
	s.answerAgent(w, r, row, err, http.StatusOK)
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	row, err := s.Store.GetAgent(r.Context(), r.PathValue("name"))
	s.answerAgent(w, r, row, err, http.StatusOK)
}

// answerAgent answers row's view, or err: agent_not_found for a row that
// is not there.
func (s *Server) answerAgent(w http.ResponseWriter, r *http.Request, row *store.Agent, err error, status int) {
	var v *agentView
	if err == nil {
		v, err = s.viewAgent(r, row)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		notFoundAgent(w, r.PathValue("name"))
	case err != nil:
		s.internal(w, r, err)
	default:
		writeJSON(w, status, v)
	}
}

// listAgents answers GET /v1/agents: every agent for the service and
// the administrator; for a per-user token, the enabled agents it may use
// (it holds their perms) holding at least one tool it may use, each with
// those tools only.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	rows, err := s.Store.ListAgents(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	views := make([]*agentView, 0, len(rows))
	if p := principalFrom(r.Context()); p.role < roleService {
		views, err = s.usableAgents(r, p, rows)
		if err != nil && !unavailable(w, err) {
			s.internal(w, r, err)
		}
		if err == nil {
			writeJSON(w, http.StatusOK, map[string]any{"agents": views})
		}
		return
	}
	for i := range rows {
		v, err := s.viewAgent(r, &rows[i])
		if err != nil {
			s.internal(w, r, err)
			return
		}
		views = append(views, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": views})
}

// usableAgents are the views of those of rows p's user may use, each
// holding the tools the user may use within it. Without an access rule
// no agent is usable (a call naming one is refused).
func (s *Server) usableAgents(r *http.Request, p principal, rows []store.Agent) ([]*agentView, error) {
	views := []*agentView{}
	if s.Access == nil {
		return views, nil
	}
	enabled, err := s.Catalog.EnabledPlugins(r.Context())
	if err != nil {
		return nil, err
	}
	for i := range rows {
		a, err := catalog.AgentFromRow(&rows[i])
		if err != nil || !a.Enabled() {
			continue // a row that does not read is used by no one
		}
		ps, err := s.Access.Usable(r.Context(), s.subject(r.Context(), p.userID, a.Name), enabled)
		switch {
		case refusal(err):
			continue
		case err != nil:
			return nil, err
		case len(ps) > 0:
			names := make([]string, len(ps))
			for j, p := range ps {
				names[j] = p.Name
			}
			views = append(views, agentViewOf(&rows[i], a, names))
		}
	}
	return views, nil
}

// refusal reports whether err refuses an agent to its subject (rather
// than saying that what decides could not be read).
func refusal(err error) bool {
	_, denied := errors.AsType[*access.DeniedError](err)
	_, agent := errors.AsType[*catalog.AgentError](err)
	return denied || agent
}

func (s *Server) deleteAgent(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	err := s.Store.DeleteAgent(r.Context(), r.PathValue("name"))
	if errors.Is(err, store.ErrNotFound) {
		notFoundAgent(w, r.PathValue("name"))
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func notFoundAgent(w http.ResponseWriter, name string) {
	writeError(w, http.StatusNotFound, catalog.CodeAgentNotFound, fmt.Sprintf("no agent named %q", name), map[string]string{"name": name})
}
