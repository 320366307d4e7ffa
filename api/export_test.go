package api

import "slices"

// AgentServers are the names of the agents whose MCP server s holds, in
// order (what a deleted agent must not keep).
func (s *Server) AgentServers() []string {
	var names []string
	s.agentMCP.Range(func(k, _ any) bool {
		names = append(names, k.(string))
		return true
	})
	slices.Sort(names)
	return names
}
