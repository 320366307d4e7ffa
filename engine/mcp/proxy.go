package mcp

import (
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/plugins"
)

// TypeProxy is the execution type of a tool seed 004's proxy call
// (POST /v1/mcp/proxy/{mcp_id}/tools/{tool_name}/call) reaches without a
// catalog row: tools/call like plugins.TypeMCP. The API builds such a
// plugin from the tool's inputSchema, so that the call is validated,
// recorded and counted by the executor like every other; the route hands
// its MCP result back whole (engine.Call.Relay), a row's as well.
const TypeProxy = "mcp_proxy"

// RegisterOn registers inv on ex for both of its execution types.
func (inv Invoker) RegisterOn(ex *engine.Executor) {
	ex.Register(plugins.TypeMCP, inv)
	ex.Register(TypeProxy, inv)
}
