package mcp

import (
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/plugins"
)

// TypeProxy is the execution type of seed 004's proxy call
// (POST /v1/mcp/proxy/{mcp_id}/tools/{tool_name}/call): tools/call like
// plugins.TypeMCP, but the MCP result is the output whatever its isError
// (FR-004 hands it back with 200), where TypeMCP reports isError as a
// failed call. The API builds such a plugin from the tool's inputSchema
// for each proxied call, so that the call is validated, recorded and
// counted by the executor like every other.
const TypeProxy = "mcp_proxy"

// RegisterOn registers inv on ex for both of its execution types.
func (inv Invoker) RegisterOn(ex *engine.Executor) {
	ex.Register(plugins.TypeMCP, inv)
	ex.Register(TypeProxy, inv)
}
