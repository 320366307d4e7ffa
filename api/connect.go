package api

import (
	"context"

	"github.com/blindexec/blindexec/connections"
)

// StartURLs gives the LLM loop's runs and the MCP sessions a fresh start
// URL when a call needs an account the user has not connected (issue
// 34): loop.Connector and mcpserver.Connector over connections.Service.
// The flow asks for the scopes the tool needs beside the provider's own;
// no display name is known there, so the confirmation page names the
// engine user.
type StartURLs struct{ Connections *connections.Service }

// ConnectionsPage implements mcpserver.Connector: the console's
// Connections page, where a signed-in user connects accounts.
func (s StartURLs) ConnectionsPage() string {
	if s.Connections.BrowserURL == "" {
		return ""
	}
	return s.Connections.BrowserURL + "/console/#/connections"
}

// StartURL implements loop.Connector and mcpserver.Connector.
func (s StartURLs) StartURL(ctx context.Context, userID int64, provider string, scopes []string) (string, error) {
	return s.Connections.Authorize(ctx, userID, provider, "", scopes...)
}
