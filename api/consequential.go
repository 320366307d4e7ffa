package api

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/blindexec/blindexec/catalog"
)

// setConsequential is POST /v1/plugins/consequential: the administrator
// classifies plugins — those in names, and every plugin tagged tag —
// as consequential (true), not (false), or derived again (null). The
// choice survives re-imports and syncs (issue 33).
func (s *Server) setConsequential(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	var req struct {
		Names         []string        `json:"names"`
		Tag           string          `json:"tag"`
		Consequential json.RawMessage `json:"consequential"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	var setting *bool
	if len(req.Consequential) == 0 || json.Unmarshal(req.Consequential, &setting) != nil {
		writeError(w, http.StatusBadRequest, "malformed_request", "consequential: expected true, false or null (derived from the method)", nil)
		return
	}
	if len(req.Names) == 0 && req.Tag == "" {
		writeError(w, http.StatusBadRequest, "malformed_request", "names or tag: name the plugins to classify", nil)
		return
	}
	names := slices.Clone(req.Names)
	if req.Tag != "" {
		ps, err := s.Catalog.EnabledPlugins(r.Context())
		if err != nil {
			s.internal(w, r, err)
			return
		}
		for _, p := range ps {
			if slices.Contains(p.Tags, req.Tag) && !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	n, err := s.Store.SetPluginsConsequential(r.Context(), names, catalog.ConsequentialColumn(setting), "admin")
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"updated": n, "names": names})
}
