package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/mcpimport"
	"github.com/blindexec/blindexec/store"
)

// MCPConfig is what the MCP routes need beside the Server's own fields.
type MCPConfig struct {
	Manager *enginemcp.Manager
	// PublicURL is the base of the api_url of GET /v1/tools?format=dynamic
	// (BLINDEXEC_PUBLIC_URL, e.g. http://blindexec:8080); empty: the
	// scheme and host the request came to.
	PublicURL string
	// AllowStdio lets the API register stdio servers. Off by default: a
	// stdio server is a command run on the engine's host, so registering
	// one is for the CLI (BLINDEXEC_MCP_ALLOW_STDIO).
	AllowStdio bool
	// ToolSearch is the tool search setting of /mcp (BLINDEXEC_TOOL_SEARCH*).
	ToolSearch toolset.Config
}

// Error codes of the MCP routes (seed 004 §7).
const (
	codeMCPServerNotFound = "mcp_server_not_found"
	codeMCPToolNotFound   = "mcp_tool_not_found"
	codeMCPCallFailed     = "mcp_call_failed"       // 502
	codeSchemaConvert     = "schema_convert_failed" // 500
)

// userHeaders name the user a service or admin request acts for, beside
// ?user_id=: X-User-Id, and the x-account-id of seed 004's identity headers
// (which GET /v1/tools?format=dynamic hands out).
var userHeaders = []string{"X-User-Id", "X-Account-Id"}

// mcpRoutes registers the MCP routes on mux:
//
//	GET    /v1/mcp/servers                       admin: registered servers
//	POST   /v1/mcp/servers                       admin: register one (enginemcp.ServerSpec)
//	DELETE /v1/mcp/servers/{id}                  admin
//	GET    /v1/mcp/servers/{id}/tools?refresh=1&user_id=  admin: its tools (cached; refresh lists afresh)
//	POST   /v1/plugins/import/mcp                admin: {"server": id|name} or {"url": ...}
//	POST   /v1/mcp/proxy/{mcp_id}/tools/{tool_name}/call   runtime: flat arguments → tools/call
//	POST   /v1/tools/{name}/call                 runtime: flat arguments → a blind call
//	/mcp                                         the catalog as an MCP server (streamable HTTP)
func (s *Server) mcpRoutes(mux *http.ServeMux, cfg *MCPConfig) {
	m := &mcpAPI{Server: s, cfg: cfg}
	mux.HandleFunc("GET /v1/mcp/servers", s.with(roleAdmin, m.listServers))
	mux.HandleFunc("POST /v1/mcp/servers", s.with(roleAdmin, m.createServer))
	mux.HandleFunc("DELETE /v1/mcp/servers/{id}", s.with(roleAdmin, m.deleteServer))
	mux.HandleFunc("GET /v1/mcp/servers/{id}/tools", s.with(roleAdmin, m.serverTools))
	mux.HandleFunc("POST /v1/plugins/import/mcp", s.with(roleAdmin, m.importMCP))
	mux.HandleFunc("POST /v1/mcp/proxy/{mcp_id}/tools/{tool_name}/call", s.with(roleUser, m.proxyCall))
	mux.HandleFunc("POST /v1/tools/{name}/call", s.with(roleUser, s.callTool))
	s.mcpService = mcpserver.NewService(s.Catalog, s.Executor, mcpserver.Options{Search: cfg.ToolSearch, NewIndex: s.mcpIndex, Logger: s.Logger})
	mux.Handle("/mcp", s.mcpService.Handler(s.mcpIdentity))
}

// CloseStreams ends the long-lived streams of /mcp sessions, which would
// otherwise hold http.Server.Shutdown until its deadline: register it
// with RegisterOnShutdown.
func (s *Server) CloseStreams() {
	if s.mcpService != nil {
		s.mcpService.Close()
	}
}

type mcpAPI struct {
	*Server
	cfg *MCPConfig
}

// mcpIdentity authenticates a request to /mcp: a per-user token acts for
// its user; the service and admin tokens for the user named by X-User-Id.
// A session is bound to the token (its hash) and that user.
func (s *Server) mcpIdentity(r *http.Request) (mcpserver.Identity, bool) {
	p, err := s.authenticate(r)
	if err != nil {
		return mcpserver.Identity{}, false
	}
	user, err := s.runtimeUser(r, p)
	if err != nil {
		return mcpserver.Identity{}, false
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return mcpserver.Identity{User: user, Principal: auth.HashToken(tok)}, true
}

// runtimeUser is the user a runtime request acts for: ?user_id= or a user
// header, checked against the principal as /v1/execute does.
func (s *Server) runtimeUser(r *http.Request, p principal) (int64, error) {
	v := r.URL.Query().Get("user_id")
	for _, h := range userHeaders {
		v = cmp.Or(v, r.Header.Get(h))
	}
	var named int64
	if v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("user_id: %q is not a user id", v)
		}
		named = n
	}
	return p.userFor(named)
}

func (m *mcpAPI) listServers(w http.ResponseWriter, r *http.Request) {
	rows, err := m.Store.ListMCPServers(r.Context())
	if err != nil {
		m.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": rows})
}

func (m *mcpAPI) createServer(w http.ResponseWriter, r *http.Request) {
	defer m.changed(r.Context())
	var spec enginemcp.ServerSpec
	if !decodeBody(w, r, &spec) {
		return
	}
	if row, ok := m.register(w, r, spec); ok {
		writeJSON(w, http.StatusCreated, row)
	}
}

func (m *mcpAPI) register(w http.ResponseWriter, r *http.Request, spec enginemcp.ServerSpec) (*store.MCPServer, bool) {
	if (spec.Transport == store.TransportStdio || len(spec.Command) > 0) && !m.cfg.AllowStdio {
		writeError(w, http.StatusForbidden, "stdio_not_allowed",
			"transport: stdio servers run a command on the engine's host; register them with `blindexec mcp server add` (or set BLINDEXEC_MCP_ALLOW_STDIO)", nil)
		return nil, false
	}
	row, err := enginemcp.Register(r.Context(), m.Store, spec, principalFrom(r.Context()).role.String())
	var se *enginemcp.SpecError
	switch {
	case errors.As(err, &se):
		writeError(w, http.StatusBadRequest, "invalid_mcp_server", se.Error(), map[string]any{"problems": se.Problems})
		return nil, false
	case errors.Is(err, store.ErrDuplicate):
		writeError(w, http.StatusConflict, "conflict", fmt.Sprintf("an MCP server with id %q or name %q exists", spec.ID, spec.Name), nil)
		return nil, false
	case err != nil:
		m.internal(w, r, err)
		return nil, false
	}
	m.cfg.Manager.Forget(row.ID)
	m.cfg.Manager.Forget(row.Name)
	return row, true
}

func (m *mcpAPI) deleteServer(w http.ResponseWriter, r *http.Request) {
	defer m.changed(r.Context())
	srv, ok := m.server(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	if err := m.Store.DeleteMCPServer(r.Context(), srv.ID); err != nil {
		m.internal(w, r, err)
		return
	}
	m.cfg.Manager.Forget(srv.ID)
	w.WriteHeader(http.StatusNoContent)
}

// server loads a registered server by id or name; 404 when absent.
func (m *mcpAPI) server(w http.ResponseWriter, r *http.Request, ref string) (*store.MCPServer, bool) {
	srv, err := m.Store.GetMCPServer(r.Context(), ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, codeMCPServerNotFound, fmt.Sprintf("no MCP server %q", ref), nil)
		return nil, false
	case err != nil:
		m.internal(w, r, err)
		return nil, false
	}
	return srv, true
}

func (m *mcpAPI) serverTools(w http.ResponseWriter, r *http.Request) {
	srv, ok := m.server(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	user, err := m.runtimeUser(r, principalFrom(r.Context()))
	if err != nil {
		writeError(w, http.StatusBadRequest, "malformed_request", err.Error(), nil)
		return
	}
	creds, ok := m.serverCreds(w, r, srv.ID, user, nil)
	if !ok {
		return
	}
	refresh := r.URL.Query().Get("refresh")
	tools, err := m.cfg.Manager.Tools(r.Context(), srv.ID, creds, refresh == "1" || refresh == "true")
	if err != nil {
		m.mcpFailure(w, r, err, creds)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"mcp_id": srv.ID, "name": srv.Name, "tools": tools})
}

// ImportMCPRequest is the body of POST /v1/plugins/import/mcp: a
// registered server (Server, its id or name), or a server to register
// (URL, with the optional fields of enginemcp.ServerSpec). UserID and
// Credentials fill the server's auth config for tools/list.
type ImportMCPRequest struct {
	Server string `json:"server,omitempty"`
	enginemcp.ServerSpec
	UserID      UserID            `json:"user_id,omitempty"`
	Credentials map[string]string `json:"credentials,omitempty"`
}

func (m *mcpAPI) importMCP(w http.ResponseWriter, r *http.Request) {
	defer m.changed(r.Context())
	var req ImportMCPRequest
	if !decodeBody(w, r, &req) {
		return
	}
	ref := req.Server
	switch {
	case ref == "" && req.URL == "" && len(req.Command) == 0:
		writeError(w, http.StatusBadRequest, "malformed_request", `give "server" (a registered server's id or name) or "url" (a server to register)`, nil)
		return
	case ref == "":
		if req.Name == "" {
			req.Name = mcpimport.ServerNameFromURL(req.URL)
		}
		row, ok := m.register(w, r, req.ServerSpec)
		if !ok {
			return
		}
		ref = row.ID
	}
	srv, ok := m.server(w, r, ref)
	if !ok {
		return
	}
	creds, ok := m.serverCreds(w, r, srv.ID, int64(req.UserID), req.Credentials)
	if !ok {
		return
	}
	tools, err := m.cfg.Manager.Tools(r.Context(), srv.ID, creds, true)
	if err != nil {
		m.mcpFailure(w, r, err, creds)
		return
	}
	rep, err := mcpimport.Import(r.Context(), m.Store, srv, tools, mcpimport.Options{By: principalFrom(r.Context()).role.String()})
	if err != nil {
		m.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// serverCreds resolves the credentials a server's auth config reads: those
// given, then the user's stored ones. Missing keys are left for the call
// to report.
func (m *mcpAPI) serverCreds(w http.ResponseWriter, r *http.Request, ref string, user int64, given map[string]string) (map[string]string, bool) {
	keys, err := m.cfg.Manager.CredentialKeys(r.Context(), ref)
	if err != nil {
		m.mcpFailure(w, r, err, nil)
		return nil, false
	}
	creds := make(map[string]string, len(keys))
	var missing []string
	for _, k := range keys {
		if v := given[k]; v != "" {
			creds[k] = v
		} else {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 && user != 0 && m.Creds != nil {
		stored, err := m.Creds.Resolve(r.Context(), user, missing)
		if err != nil {
			m.internal(w, r, err)
			return nil, false
		}
		maps.Copy(creds, stored)
	}
	return creds, true
}

var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_./-]{1,128}$`)

// proxyCall is seed 004 FR-004: the flat JSON body is the arguments of
// tools/call of tool_name on server mcp_id, with the calling user's
// credentials; the MCP result comes back with 200, isError included.
func (m *mcpAPI) proxyCall(w http.ResponseWriter, r *http.Request) {
	id, tool := r.PathValue("mcp_id"), r.PathValue("tool_name")
	if !enginemcp.ValidServerID(id) {
		writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("mcp_id: %q is not a server id", id), nil)
		return
	}
	if !toolNamePattern.MatchString(tool) {
		writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("tool_name: %q is not a tool name", tool), nil)
		return
	}
	args, ok := objectBody(w, r)
	if !ok {
		return
	}
	user, err := m.runtimeUser(r, principalFrom(r.Context()))
	if err != nil {
		writeError(w, http.StatusForbidden, "forbidden", err.Error(), nil)
		return
	}
	creds, ok := m.serverCreds(w, r, id, user, nil)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), engine.DefaultTimeout)
	defer cancel()
	if _, err := m.cfg.Manager.Tool(ctx, id, tool, creds); err != nil {
		m.mcpFailure(w, r, err, creds)
		return
	}
	res, err := m.cfg.Manager.CallTool(ctx, enginemcp.Call{Server: id, Tool: tool, Arguments: args, Credentials: creds})
	if err != nil {
		m.mcpFailure(w, r, err, creds)
		return
	}
	body, err := json.Marshal(enginemcp.ResultOf(res))
	if err != nil {
		m.Logger.ErrorContext(r.Context(), "MCP result conversion failed", "mcp_id", id, "tool", tool, "err", err)
		writeError(w, http.StatusInternalServerError, codeSchemaConvert, "the MCP result could not be converted: "+err.Error(), nil)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write(auth.NewMasker(slices.Collect(maps.Values(creds))...).Bytes(body))
}

// objectBody reads a body that must be a JSON object: the flat arguments.
func objectBody(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("read body: %v", err), nil)
		return nil, false
	}
	var args map[string]any
	if err := json.Unmarshal(body, &args); err != nil || args == nil {
		writeError(w, http.StatusBadRequest, "malformed_request", "body: must be a JSON object of the tool's arguments ({} for none)", nil)
		return nil, false
	}
	return args, true
}

// mcpFailure answers an error of the MCP client as seed 004 §7 says, its
// message masked.
func (m *mcpAPI) mcpFailure(w http.ResponseWriter, r *http.Request, err error, creds map[string]string) {
	msg := auth.NewMasker(slices.Collect(maps.Values(creds))...).String(err.Error())
	var nf *enginemcp.ToolNotFoundError
	var up *enginemcp.UpstreamError
	var missing *auth.MissingCredentialsError
	switch {
	case errors.Is(err, enginemcp.ErrServerNotFound):
		writeError(w, http.StatusNotFound, codeMCPServerNotFound, msg, nil)
	case errors.As(err, &nf):
		writeError(w, http.StatusNotFound, codeMCPToolNotFound, msg, map[string]any{"tool_name": nf.Tool})
	case errors.Is(err, enginemcp.ErrServerDisabled):
		writeError(w, http.StatusConflict, engine.CodePluginDisabled, msg, nil)
	case errors.As(err, &missing):
		writeError(w, http.StatusUnprocessableEntity, engine.CodeMissingCredentials, msg+" (store them for the user)", map[string]any{"missing": missing.Keys})
	case errors.As(err, &up), errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusBadGateway, codeMCPCallFailed, msg, nil)
	default:
		m.internal(w, r, err)
	}
}

// callTool is POST /v1/tools/{name}/call: the body is the flat arguments
// of the catalog plugin name, executed blind for the caller; the answer is
// the executed call's envelope, as for /v1/execute.
func (s *Server) callTool(w http.ResponseWriter, r *http.Request) {
	args, ok := objectBody(w, r)
	if !ok {
		return
	}
	user, err := s.runtimeUser(r, principalFrom(r.Context()))
	if err != nil {
		writeError(w, http.StatusForbidden, "forbidden", err.Error(), nil)
		return
	}
	p, ok := s.resolvePlugin(w, r, r.PathValue("name"), nil)
	if !ok {
		return
	}
	raw, _ := json.Marshal(args)
	res, err := s.Executor.Execute(r.Context(), engine.Call{Plugin: p, Arguments: raw, UserID: user})
	writeResult(w, res, err)
}

// DynamicTool is one entry of seed 004 §5.1's _dynamic_tools.
type DynamicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // without fixed params
	APIURL      string          `json:"api_url"`
	// OriginalSchema is the plugin's parameters with the fixed ones (for an
	// imported MCP tool, its inputSchema as converted at import).
	OriginalSchema json.RawMessage `json:"original_schema"`
	FixedParams    map[string]any  `json:"fixed_params"`
	// APICallStrategy says how to call api_url: POST the flat arguments
	// merged with fixed_params as a JSON object, with the caller's bearer
	// token and the headers of the answer.
	APICallStrategy string `json:"api_call_strategy"`
}

// callStrategy is the api_call_strategy of every dynamic tool.
const callStrategy = "post_flat_json"

// dynamicTools answers GET /v1/tools?format=dynamic (seed 004 §5.1): the
// enabled plugins (or ?names=) as _dynamic_tools for callers running their
// own agent loop, with the caller's identity headers. It never hands out a
// credential or the Authorization header.
func (s *Server) dynamicTools(w http.ResponseWriter, r *http.Request, cfg *MCPConfig) {
	p := principalFrom(r.Context())
	user, err := s.runtimeUser(r, p)
	if err != nil {
		writeError(w, http.StatusForbidden, "forbidden", err.Error(), nil)
		return
	}
	ps, err := s.toolPlugins(r)
	if err != nil {
		s.toolsError(w, r, err)
		return
	}
	base := strings.TrimRight(cfg.PublicURL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	out := make([]DynamicTool, 0, len(ps))
	for _, pl := range ps {
		out = append(out, dynamicTool(pl, base))
	}
	account := ""
	if user != 0 {
		account = strconv.FormatInt(user, 10)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"headers":        map[string]string{"x-account-id": account, "x-account-type": p.role.String()},
		"_dynamic_tools": out,
	})
}

func dynamicTool(p *plugins.Plugin, base string) DynamicTool {
	t := p.Tool(nil).Function
	api := base + "/v1/tools/" + url.PathEscape(p.Name) + "/call"
	if p.ExecType() == plugins.TypeMCP {
		api = base + "/v1/mcp/proxy/" + url.PathEscape(p.Execution.MCPID) + "/tools/" + url.PathEscape(p.Execution.ToolName) + "/call"
	}
	fixed := p.FixedParams
	if fixed == nil {
		fixed = map[string]any{}
	}
	return DynamicTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters, APIURL: api,
		OriginalSchema: p.Parameters, FixedParams: fixed, APICallStrategy: callStrategy}
}
