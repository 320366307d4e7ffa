package auth_test

import (
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// TestStdioServerIsItsOwnDestination (hosts76): a stdio MCP server's
// tools send their keys to that server: its enabled row lets its tool
// without a row have the key, another stdio server reading it does not
// (before: both "an origin not fixed", refused alike), and an http
// plugin's origin is still its base URL's.
func TestStdioServerIsItsOwnDestination(t *testing.T) {
	stdio := func(id string) auth.ServerSends {
		return auth.ServerSendsOf(&store.MCPServer{ID: id, Transport: store.TransportStdio, AuthConfig: store.JSON(`{"type":"bearer","token":"LOCAL_KEY"}`)})
	}
	tool := func(name, server string) *plugins.Plugin {
		return &plugins.Plugin{Name: name, Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: server, ToolName: name}}
	}
	ks := auth.KeySends{}
	row := tool("local_list", "local")
	ks.Add(row, auth.KeyOrigins(row, stdio("local")))
	if e := ks.Elsewhere("LOCAL_KEY", auth.KeyOrigins(tool("local_new", "local"), stdio("local"))["LOCAL_KEY"]); e != nil {
		t.Errorf("the same stdio server's tool: %v", e)
	}
	e := ks.Elsewhere("LOCAL_KEY", auth.KeyOrigins(tool("other_list", "other"), stdio("other"))["LOCAL_KEY"])
	if e == nil || e.Origin != "stdio:other" || e.Error() != "credential LOCAL_KEY: sent to stdio:other, where no enabled plugin sends it (it goes to stdio:local (plugin local_list))" {
		t.Errorf("another stdio server's tool: %v", e)
	}
	web := &plugins.Plugin{Name: "web", Execution: plugins.Execution{Type: plugins.TypeHTTP, BaseURL: "https://API.example:8443/v1"},
		AuthConfig: plugins.AuthConfig{Type: plugins.AuthBearer, Token: "WEB_KEY"}}
	if got := auth.KeyOrigins(web, auth.ServerSends{}); got["WEB_KEY"] != "https://api.example:8443" {
		t.Errorf("an http plugin's key goes to %q", got["WEB_KEY"])
	}
}
