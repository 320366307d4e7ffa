package api

import (
	"encoding/json"
	"net/http"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
)

// setPerms is POST /v1/plugins/perms: the administrator sets the
// permissions a user needs to use plugins (issue 46) — those named, those
// tagged, those an import source wrote, enabled or not — to the RuoYi
// permission strings of perms, or to none with null or []. The setting
// survives re-imports and syncs.
func (s *Server) setPerms(w http.ResponseWriter, r *http.Request) {
	defer s.changed(r.Context())
	var req struct {
		catalog.Selection
		Perms json.RawMessage `json:"perms"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	var perms []string
	if len(req.Perms) == 0 || json.Unmarshal(req.Perms, &perms) != nil {
		writeError(w, http.StatusBadRequest, "malformed_request", `perms: expected a list of RuoYi permission strings (["system:user:list"]), or null or [] for none`, nil)
		return
	}
	fields := append(req.Check(""), plugins.CheckPerms("perms", perms)...)
	if req.Empty() {
		fields = append(fields, plugins.FieldError{Field: "names", Message: "names, tags or sources: name the plugins to set"})
	}
	if len(fields) > 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", (&plugins.ValidationError{Fields: fields}).Error(), map[string]any{"fields": fields})
		return
	}
	names, err := s.Catalog.SelectedNames(r.Context(), req.Selection)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	n, err := s.Store.SetPluginsPerms(r.Context(), names, plugins.JoinPerms(perms), "admin")
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"updated": n, "names": names, "perms": perms})
}
