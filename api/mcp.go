package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/header"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/mcpimport"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/tracing"
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
	// Sessions bound the sessions of /mcp (BLINDEXEC_MCP_MAX_SESSIONS*,
	// BLINDEXEC_MCP_SESSION_IDLE_MS).
	Sessions mcpserver.SessionLimits
	// StateKey seals the requestStates of 2026-07-28 clients' multi
	// round-trip requests (mcpserver.StateKey of the master key); nil:
	// such a client reads the tool error naming the pending call.
	StateKey []byte
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
	mux.HandleFunc("GET /v1/pending", s.with(roleUser, s.listPending))
	mux.HandleFunc("POST /v1/pending/{id}", s.with(roleUser, s.decidePending))
	opts := mcpserver.Options{Search: cfg.ToolSearch, NewIndex: s.mcpIndex, Logger: s.Logger, Sessions: cfg.Sessions, Tracer: s.Tracer,
		Access: s.Access}
	if inbox := s.inbox(); inbox != nil {
		opts.Inbox = inbox
	}
	if s.Confirm != "" && s.Confirm != confirm.Never {
		opts.Gate = &MCPGate{Store: s.Store, Confirm: s.Confirm, TTL: s.ConfirmTTL, PublicURL: cfg.PublicURL,
			ViaConsole: s.ConfirmVia == "console", Metrics: s.confirmMetrics, Logger: s.Logger}
	}
	if s.Connections != nil {
		opts.Connector = StartURLs{s.Connections}
	}
	if cfg.StateKey != nil {
		opts.RoundTrips = &mcpserver.RoundTrips{Key: cfg.StateKey, Claims: s.Store}
	}
	s.mcpService = mcpserver.NewService(s.Catalog, s.Executor, opts)
	if s.Registry != nil {
		// A second Handler on one registry keeps the first one's.
		if err := s.mcpService.Register(s.Registry); err != nil {
			s.Logger.Warn("MCP session metrics not registered", "err", err)
		}
	}
	catalog := s.mcpService.Handler(s.mcpIdentity)
	mux.Handle("/mcp", s.sameOrigin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r)
		if err != nil {
			catalog.ServeHTTP(w, r) // answers 401 without reading the body
			return
		}
		s.serveMCP(w, r, p, catalog)
	})))
	s.agentMCPRoutes(mux, opts, catalog)
}

// serveMCP hands an authenticated request to an MCP server's handler.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request, p principal, h http.Handler) {
	r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
	if s.Tracer != nil && r.Method == http.MethodPost { // not a session's stream (GET), which lasts as long as it
		s.serveTraced(w, r, p, func(w http.ResponseWriter, r *http.Request) {
			// The SDK runs a tool call apart from its HTTP request's
			// context; the header, rewritten with this request's span
			// (the caller's value replaced once trusted or not), is what
			// reaches the call (mcpserver.Options.Tracer).
			r.Header.Del(tracing.TraceparentHeader)
			tracing.Inject(r.Context(), r.Header)
			scanJSON(h)(w, r)
		})
		return
	}
	scanJSON(h)(w, r)
}

// endRevoked ends the MCP sessions and listen streams of per-user tokens
// revoked or expired, on /mcp and every agent's: their requests are
// refused already (principalFor), but a stream held open would go on
// telling a revoked token of catalog changes, hidden tools' included.
// A token that cannot be checked now (the database) is kept, and the
// first read that failed returned: the caller runs it again. A console
// session's are its token's (consolePrincipal), ended alike, and at its
// sign-out (which moves the token counter, so every replica runs this).
func (s *Server) endRevoked(ctx context.Context) (unchecked error) {
	admin, service := s.operators.get(s)
	unread := func(err error) {
		if unchecked == nil {
			unchecked = err
		}
	}
	var signedOut map[string]bool // read once, at the first console session met
	gone := func(id mcpserver.Identity) bool {
		hash, console := strings.CutPrefix(id.Principal, consolePrincipal)
		if console {
			var sid string
			sid, hash, _ = strings.Cut(hash, ":")
			if ends, ok := s.Sessions.(SessionEnds); ok {
				if signedOut == nil {
					var err error
					if signedOut, err = ends.Ended(ctx); err != nil {
						unread(err)
						signedOut = map[string]bool{} // kept, as a token unchecked is
					}
				}
				if signedOut[sid] {
					return true
				}
			}
		}
		switch hash {
		case "", admin, service:
			return false
		}
		t, err := s.lookupToken(ctx, hash)
		if err != nil {
			unread(err)
			return false
		}
		if !t.found || t.expires != nil && time.Now().After(*t.expires) {
			return true
		}
		// Perms changed since the session opened: its streams would go on
		// with the old ones (mcpserver.Identity.Same refuses its requests).
		now := mcpserver.Identity{User: id.User, Principal: id.Principal}
		if t.perms != nil {
			now.Narrow = []access.Held{access.HeldOf(t.perms...)}
		}
		return !id.Same(now)
	}
	if s.mcpService != nil {
		s.mcpService.End(gone)
	}
	s.agentMCP.Range(func(_, v any) bool {
		v.(*agentMCP).svc.End(gone)
		return true
	})
	return unchecked
}

// CloseStreams ends the long-lived streams of /mcp sessions, which would
// otherwise hold http.Server.Shutdown until its deadline: register it
// with RegisterOnShutdown.
func (s *Server) CloseStreams() {
	if s.mcpService != nil {
		s.mcpService.Close()
	}
	s.agentMCP.Range(func(_, v any) bool {
		v.(*agentMCP).svc.Close()
		return true
	})
}

type mcpAPI struct {
	*Server
	cfg     *MCPConfig
	proxies proxyPlugins
}

// errMCPToken is the 401 of /mcp: what each kind of token needs there.
const errMCPToken = "/mcp needs Authorization: Bearer <token>: a per-user token (acts for its user), or the service or admin token with X-User-Id: <user id> naming the user whose credentials apply"

// mcpUser authenticates a request to /mcp: a per-user token acts for its
// user; the service and admin tokens for the user named by X-User-Id (or
// X-Account-Id, or ?user_id=), which they must name: an MCP session has
// no payload to carry it, and acting as no user would silently drop the
// user's stored credentials.
func (s *Server) mcpUser(r *http.Request) (int64, principal, error) {
	p, ok := r.Context().Value(principalKey{}).(principal)
	if !ok {
		var err error
		if p, err = s.authenticate(r); err != nil {
			return 0, p, fmt.Errorf("%v; %s", err, errMCPToken)
		}
	}
	user, err := s.runtimeUser(r, p)
	if err != nil {
		return 0, p, fmt.Errorf("%v; %s", err, errMCPToken)
	}
	if p.role != roleUser && user <= 0 {
		return 0, p, fmt.Errorf("the %s token must name the user: X-User-Id is missing; %s", p.role, errMCPToken)
	}
	return user, p, nil
}

// mcpIdentity is who a request to /mcp is (mcpUser): a session is bound to
// the token (its hash) and the user it acts for.
func (s *Server) mcpIdentity(r *http.Request) (mcpserver.Identity, error) {
	user, p, err := s.mcpUser(r)
	if err != nil {
		return mcpserver.Identity{}, err
	}
	principal := p.tokenHash
	if p.browser {
		principal = consolePrincipal + p.session + ":" + principal
	}
	return mcpserver.Identity{User: user, Principal: principal, Narrow: narrowing(r.Context(), nil), Token: p.tokenID}, nil
}

// consolePrincipal marks a console session's MCP identity, the session's
// id and its token's hash after it ("console:<sid>:<hash>"): the
// session's MCP sessions are never a bearer client's of the same token,
// nor another console session's, and end as that token's do, or at the
// session's sign-out (endRevoked).
const consolePrincipal = "console:"

// runtimeUser is the user a runtime request acts for: ?user_id= or a user
// header, checked against the principal as /v1/execute does.
func (s *Server) runtimeUser(r *http.Request, p principal) (int64, error) {
	var v string
	if r.URL.RawQuery != "" { // Query parses into a new map: not for every /mcp request's empty query
		v = r.URL.Query().Get("user_id")
	}
	for _, h := range userHeaders {
		v = cmp.Or(v, header.Get(r.Header, h))
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
	if principalFrom(r.Context()).browser {
		for i := range rows {
			serverForBrowser(&rows[i])
		}
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
		if principalFrom(r.Context()).browser {
			serverForBrowser(row)
		}
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
	disabled, err := m.Store.DeleteMCPServer(r.Context(), srv.ID, principalFrom(r.Context()).role.String())
	if err != nil {
		m.internal(w, r, err)
		return
	}
	m.cfg.Manager.Forget(srv.ID)
	m.cfg.Manager.Forget(srv.Name)
	if len(disabled) > 0 {
		m.Logger.InfoContext(r.Context(), "MCP server removed: its plugins disabled", "mcp_id", srv.ID, "plugins", disabled)
	}
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
	refresh, err := boolParam(r, "refresh")
	if err != nil {
		writeError(w, http.StatusBadRequest, "malformed_request", err.Error(), nil)
		return
	}
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
	tools, err := m.cfg.Manager.Tools(r.Context(), srv.ID, creds, refresh)
	if err != nil {
		m.mcpFailure(w, r, err, m.cfg.Manager.Masker(r.Context(), srv.ID, creds))
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
	if err == nil {
		var rep *importer.MCPReport
		opts := importer.MCPOptions{By: principalFrom(r.Context()).role.String(), MaxBytes: m.ImportMaxBytes}
		if rep, err = importer.MCPTools(r.Context(), m.Store, srv, tools, opts); err == nil {
			writeJSON(w, http.StatusOK, rep)
			return
		}
	}
	// As an OpenAPI import's: the server's list, or what it makes, is
	// over the import's limit; nothing was written.
	if tl := (*mcpimport.TooLargeError)(nil); errors.As(err, &tl) {
		writeError(w, http.StatusBadRequest, "import_too_large", tl.Error(),
			map[string]any{"limit": "import bytes", "max": tl.Max, "tool": tl.Tool})
		return
	}
	m.mcpFailure(w, r, err, m.cfg.Manager.Masker(r.Context(), srv.ID, creds))
}

// serverCreds resolves the credentials a server's auth config reads:
// those given, then the user's stored ones (Manager.Credentials). Missing
// keys are left for the call to report.
func (m *mcpAPI) serverCreds(w http.ResponseWriter, r *http.Request, ref string, user int64, given map[string]string) (map[string]string, bool) {
	var stored engine.CredentialResolver
	if m.Creds != nil {
		stored = m.Creds
	}
	creds, err := m.cfg.Manager.Credentials(r.Context(), ref, user, given, stored)
	if moved, ok := errors.AsType[*engine.HostMovedError](err); ok {
		writeError(w, http.StatusUnprocessableEntity, engine.CodeCredentialNotBound, moved.Error(), map[string]any{"mcp_server": moved.Server, "field": moved.Field, "given_for": moved.Given, "now": moved.Now})
		return nil, false
	}
	if err != nil {
		m.mcpFailure(w, r, err, nil)
		return nil, false
	}
	return creds, true
}

var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_./-]{1,128}$`)

// proxyCall is seed 004 FR-004: the flat JSON body is the arguments of
// tools/call of tool_name on server mcp_id, with the calling user's
// credentials; the MCP result comes back with 200, isError included
// (engine.Call.Relay). The call goes through the executor (the tool's catalog row, else a plugin
// of type enginemcp.TypeProxy built from its inputSchema: proxied):
// validated, recorded and counted like every other call.
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
	// The executor resolves the stored credentials, as stored: their
	// masking classes are then the catalog's.
	call := engine.Call{Arguments: args, UserID: user, Agent: agentParam(r), Relay: true}
	call.Token, call.Narrow = calling(r.Context(), nil)
	if call.Plugin, ok = m.proxied(w, r, id, tool, call); !ok {
		return
	}
	res, err, ok := m.sendDirect(w, r, &call, false, r.Header.Get(HeaderConfirmation))
	if !ok {
		return
	}
	var refused *engine.RefusedError
	switch {
	case errors.As(err, &refused) && refused.Code == engine.CodeInvalidArguments:
		// seed 004 §7: a parameter validation failure is 400.
		writeError(w, http.StatusBadRequest, refused.Code, refused.Message, mergeDetails(refused.Details, res.ExecutionID))
	case err != nil:
		writeResult(w, res, err)
	case res.Error != nil:
		writeError(w, http.StatusBadGateway, codeMCPCallFailed, res.Error.Message, mergeDetails(res.Error.Details, res.ExecutionID))
	default:
		// The MCP result whole, masked, within MaxResponseBytes (the
		// output, binary data described, when it could not be relayed).
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Execution-Id", res.ExecutionID)
		w.WriteHeader(http.StatusOK)
		if len(res.Relayed) > 0 {
			w.Write(res.Relayed)
		} else {
			w.Write(res.Output)
		}
	}
}

// proxied is the plugin a proxied call of tool on server id is, decided
// from the catalog before anything is asked of the server: the row
// calling the tool, as the catalog route finds it — its id, name, tags,
// classification, parameters and fixed params, its status (a disabled
// row refuses the call as a disabled plugin does everywhere), its MCP
// result passed through (engine.Call.Relay). The route names the server
// and the tool, never the row, whose name an import may have prefixed
// (issue 44 point 3): nothing about the call is found by a name rebuilt
// from the tool's. Without a row the tool is the server's alone: the
// access rule judges it first (engine.Executor.Allowed), so that a user
// refused it makes no request with the user's credentials and learns
// nothing of what the server holds (a tool it lacks is refused alike);
// only then is the server asked for its schema (proxyPlugin). ok false:
// answered.
func (m *mcpAPI) proxied(w http.ResponseWriter, r *http.Request, id, tool string, call engine.Call) (_ *plugins.Plugin, ok bool) {
	row, err := m.Catalog.MCPTool(r.Context(), id, tool)
	switch {
	case err == nil:
		return row, true
	case !errors.Is(err, store.ErrNotFound):
		m.internal(w, r, err)
		return nil, false
	}
	asked := call
	asked.Plugin = &plugins.Plugin{Name: proxyName(tool), Execution: plugins.Execution{Type: enginemcp.TypeProxy, MCPID: id, ToolName: tool}}
	judged, res, err := m.Executor.Allowed(r.Context(), asked)
	if err != nil {
		if res == nil {
			m.internal(w, r, err)
		} else {
			writeResult(w, res, err)
		}
		return nil, false
	}
	creds, ok := m.serverCreds(w, r, id, call.UserID, nil)
	if !ok {
		return nil, false
	}
	p, err := m.proxyPlugin(r.Context(), id, tool, creds, judged)
	var conv *mcpimport.ConversionError
	switch {
	case errors.As(err, &conv):
		m.Logger.ErrorContext(r.Context(), "MCP schema conversion failed", "mcp_id", id, "tool", tool, "err", err)
		writeError(w, http.StatusInternalServerError, codeSchemaConvert, conv.Error(), limitDetails(err))
		return nil, false
	case err != nil:
		m.mcpFailure(w, r, err, m.cfg.Manager.Masker(r.Context(), id, creds))
		return nil, false
	}
	return p, true
}

// proxyName is the plugin name of a proxied tool without a row: its
// name sanitized, cut to the 64 of the record's plugin_name (ASCII:
// anywhere).
func proxyName(tool string) string {
	name := mcpimport.SanitizeName(tool)
	return name[:min(len(name), 64)]
}

// proxyPlugin is the plugin of a proxied call: the tool's inputSchema
// converted as the importer converts it (cost limits included), kept per
// listed tool so that repeated calls convert once. The tool is listed
// with creds from the server row judged (its digest, from
// engine.Executor.Allowed; "" when no stored key was judged).
func (m *mcpAPI) proxyPlugin(ctx context.Context, id, tool string, creds map[string]string, judged string) (*plugins.Plugin, error) {
	ctx, cancel := context.WithTimeout(ctx, engine.DefaultTimeout)
	defer cancel()
	t, err := m.cfg.Manager.Tool(ctx, id, tool, creds, judged)
	if err != nil {
		return nil, err
	}
	keys, err := m.cfg.Manager.CredentialKeys(ctx, id)
	if err != nil {
		return nil, err
	}
	trusted, err := m.cfg.Manager.Trusted(ctx, id)
	if err != nil {
		return nil, err
	}
	key := proxyKey{tool: t, creds: strings.Join(keys, "\x00"), trusted: trusted}
	if p := m.proxies.get(key); p != nil {
		return p, nil
	}
	params, written, _, err := mcpimport.Schemas(t.InputSchema, 0)
	if err != nil {
		return nil, &mcpimport.ConversionError{Tool: t.Name, Err: err}
	}
	p := &plugins.Plugin{
		Name:                proxyName(t.Name),
		Parameters:          params,
		Execution:           plugins.Execution{Type: enginemcp.TypeProxy, MCPID: id, ToolName: t.Name, InputSchema: written},
		RequiredCredentials: keys,
		// Consequential unless its trusted server marks it read-only (a
		// catalog row of the tool, when there is one, is the call:
		// proxied).
		ConsequentialHint: mcpimport.ConsequentialHint(t.Annotations, trusted),
	}
	m.proxies.put(key, p)
	return p, nil
}

// proxyKey identifies a proxy plugin: the listed tool (a new list makes new
// tools) and the credential keys of its server.
type proxyKey struct {
	tool    *sdk.Tool
	creds   string
	trusted bool
}

// proxyPlugins remembers proxy plugins; cleared when full.
type proxyPlugins struct {
	mu sync.Mutex
	m  map[proxyKey]*plugins.Plugin
}

const proxyPluginsMax = 1024

func (c *proxyPlugins) get(k proxyKey) *plugins.Plugin {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *proxyPlugins) put(k proxyKey, p *plugins.Plugin) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= proxyPluginsMax {
		c.m = make(map[proxyKey]*plugins.Plugin)
	}
	c.m[k] = p
}

// objectBody reads a body that must be a JSON object: the flat arguments,
// left for the executor to decode.
func objectBody(w http.ResponseWriter, r *http.Request) (json.RawMessage, bool) {
	body, ok := readJSON(w, r)
	if !ok {
		return nil, false
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' || !gjson.ValidBytes(t) {
		writeError(w, http.StatusBadRequest, "malformed_request", "body: must be a JSON object of the tool's arguments ({} for none)", nil)
		return nil, false
	}
	return body, true
}

// mcpFailure answers an error of the MCP client as seed 004 §7 says, its
// message masked.
func (m *mcpAPI) mcpFailure(w http.ResponseWriter, r *http.Request, err error, mask *auth.Masker) {
	msg := mask.String(err.Error())
	var nf *enginemcp.ToolNotFoundError
	var up *enginemcp.UpstreamError
	var missing *auth.MissingCredentialsError
	var changed *enginemcp.DestinationChangedError
	switch {
	case errors.As(err, &changed):
		writeError(w, http.StatusUnprocessableEntity, engine.CodeCredentialNotBound,
			msg+" (where the user's stored credentials go was judged on the row before); nothing was sent", map[string]any{"mcp_server": changed.Server})
	case errors.Is(err, enginemcp.ErrServerNotFound):
		writeError(w, http.StatusNotFound, codeMCPServerNotFound, msg, nil)
	case errors.As(err, &nf):
		writeError(w, http.StatusNotFound, codeMCPToolNotFound, msg, map[string]any{"tool_name": nf.Tool})
	case errors.Is(err, enginemcp.ErrServerDisabled):
		writeError(w, http.StatusConflict, engine.CodePluginDisabled, msg, nil)
	case errors.Is(err, auth.ErrSecretTooShort):
		writeError(w, http.StatusUnprocessableEntity, engine.CodeAuthError, msg, nil)
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
	call := engine.Call{Plugin: p, Arguments: args, UserID: user, Agent: agentParam(r)}
	call.Token, call.Narrow = calling(r.Context(), nil)
	if res, err, ok := s.sendDirect(w, r, &call, false, r.Header.Get(HeaderConfirmation)); ok {
		writeResult(w, res, err)
	}
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
	// A listing within an agent hands out calls within it: each
	// api_url carries ?agent= on, so that a call made from the listing
	// stays narrowed to the agent's tools (the executor refuses others).
	within := ""
	if agent := agentParam(r); agent != "" {
		within = "?" + url.Values{"agent": {agent}}.Encode()
	}
	out := make([]DynamicTool, 0, len(ps))
	for _, pl := range ps {
		out = append(out, dynamicTool(pl, base, within))
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

// dynamicTool is p's entry, its api_url on base ending with query.
func dynamicTool(p *plugins.Plugin, base, query string) DynamicTool {
	t := p.Tool(nil).Function
	api := base + "/v1/tools/" + url.PathEscape(p.Name) + "/call"
	if p.ExecType() == plugins.TypeMCP {
		api = base + "/v1/mcp/proxy/" + url.PathEscape(p.Execution.MCPID) + "/tools/" + url.PathEscape(p.Execution.ToolName) + "/call"
	}
	api += query
	fixed := p.FixedParams
	if fixed == nil {
		fixed = map[string]any{}
	}
	return DynamicTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters, APIURL: api,
		OriginalSchema: p.Parameters, FixedParams: fixed, APICallStrategy: callStrategy}
}
