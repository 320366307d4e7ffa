package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/store"
)

// agentMCP is the MCP server of one agent (/mcp/agents/{name}).
type agentMCP struct {
	svc *mcpserver.Service
	h   http.Handler
}

// agentMCPRoutes serves each agent's tools as an MCP server of its own at
// /mcp/agents/{name} (issue 46): /mcp's server, on the agent's view of
// the catalog (its tools, its own tool search over them), each session
// acting for its user within the agent. A request naming an agent its
// user may not use is refused before any MCP is spoken: 404
// agent_not_found, 409 agent_disabled, 403 permission_denied. Open
// sessions get notifications/tools/list_changed when the catalog or an
// agent changes (seen by every replica within one poll), as /mcp's do
// when the catalog does.
func (s *Server) agentMCPRoutes(mux *http.ServeMux, opts mcpserver.Options, unauthorized http.Handler) {
	mux.Handle("/mcp/agents/{name}", s.sameOrigin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r)
		if err != nil {
			unauthorized.ServeHTTP(w, r) // 401, the body unread
			return
		}
		id, err := s.mcpIdentity(r)
		if err != nil {
			unauthorized.ServeHTTP(w, r) // 401 naming what the token lacks
			return
		}
		name := r.PathValue("name")
		if s.Access == nil {
			writeError(w, http.StatusServiceUnavailable, "permissions_unavailable", "agents: this engine has no access rule to judge them by", nil)
			return
		}
		if _, err := s.Access.UseAgent(r.Context(), access.Subject{User: id.User, Narrow: id.Narrow, Agent: name}); err != nil {
			if !unavailable(w, err) && !refusedAgent(w, err) {
				s.internal(w, r, err)
			}
			return
		}
		s.serveMCP(w, r, p, s.agentServer(name, opts).h)
	})))
	if s.Changes != nil {
		s.Changes.OnChange(func(old, new store.Versions) {
			// A grant changed (Versions.Grants) changes what a view may
			// list as a catalog change does: each session whose list
			// changed is told.
			grants := new.Grants != old.Grants
			if new.Plugins != old.Plugins || grants {
				s.mcpService.Changed()
			}
			if new.Agents != old.Agents {
				s.dropDeletedAgents(context.Background())
			}
			if new.Plugins != old.Plugins || new.Agents != old.Agents || grants {
				s.agentMCP.Range(func(_, v any) bool {
					v.(*agentMCP).svc.Changed()
					return true
				})
			}
			if new.Tokens != old.Tokens {
				s.revokeDue = true
			}
		})
		// After OnChange's listeners, and at every poll after: a move whose
		// checks could not all be read is not consumed until they are.
		s.Changes.OnPoll(func(store.Versions) {
			if !s.revokeDue {
				return
			}
			err := s.endRevoked(context.Background())
			if err == nil {
				s.revokeDue = false
				s.revokeUnread = false
				return
			}
			if !s.revokeUnread {
				s.revokeUnread = true
				s.Logger.Warn("revoked tokens' and signed-out console sessions' MCP streams: a check could not be read; checked again at each poll until it is", "error", err)
			}
		})
	}
}

// dropDeletedAgents closes and forgets the MCP servers of agents that no
// longer exist (their sessions end; a request naming one is 404
// agent_not_found before any server is made), so that a deleted agent
// holds no memory. A disabled agent keeps its server: it may be enabled
// again, and its requests are 409 agent_disabled meanwhile.
func (s *Server) dropDeletedAgents(ctx context.Context) {
	s.agentMCP.Range(func(k, v any) bool {
		_, err := s.Agents.Get(ctx, k.(string))
		if ae, ok := errors.AsType[*catalog.AgentError](err); ok && !ae.Disabled && s.agentMCP.CompareAndDelete(k, v) {
			v.(*agentMCP).svc.Close()
		}
		return true
	})
}

// agentServer is the MCP server of the agent called name, made on first
// use from opts (/mcp's options).
func (s *Server) agentServer(name string, opts mcpserver.Options) *agentMCP {
	if v, ok := s.agentMCP.Load(name); ok {
		return v.(*agentMCP)
	}
	opts.Agent, opts.NewIndex = name, nil // an index of the agent's tools
	opts.Row = s.Catalog.Row
	svc := mcpserver.NewService(s.Agents.View(name), s.Executor, opts)
	v, lost := s.agentMCP.LoadOrStore(name, &agentMCP{svc: svc, h: svc.Handler(s.mcpIdentity)})
	if lost {
		svc.Close()
	}
	return v.(*agentMCP)
}
