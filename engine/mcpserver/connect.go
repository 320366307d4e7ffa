package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
)

// Connector gives the session's user a fresh start URL to connect an
// account at a provider (issue 34); the API implements it over
// connections.Service.
type Connector interface {
	StartURL(ctx context.Context, userID int64, provider string, scopes []string) (string, error)
}

// connect answers a call refused for want of the user's connection: a
// client that declared URL elicitation gets the specification's
// URL-elicitation-required error, the start URL to open; any other a
// tool error carrying it (connect_at). The client calls the tool again
// once the user has connected. ok is
// false for any other result, without a Connector, or when no start URL
// can be made (the engine's error then stands).
func (ss *session) connect(ctx context.Context, res *engine.Result, client *sdk.ServerSession) (_ *sdk.CallToolResult, _ error, ok bool) {
	c := ss.svc.opts.Connector
	if c == nil || res == nil || res.OK {
		return nil, nil, false
	}
	provider, scopes, missing, ok := engine.NeededConnection(res.Error)
	if !ok {
		return nil, nil, false
	}
	url, err := c.StartURL(ctx, ss.user, provider, scopes)
	if err != nil {
		ss.svc.log.WarnContext(ctx, "no start URL for a connection the call needs; the client reads the error", "provider", provider, "err", err)
		return nil, nil, false
	}
	msg := fmt.Sprintf("Connect your %s account to let this tool act for you, then call it again.", provider)
	if res.HTTPStatus == 0 {
		msg = fmt.Sprintf("Connect your %s account to let this tool act for you, then call it again; nothing was sent.", provider)
	}
	if _, urlMode := elicitation(client); urlMode {
		var id [16]byte
		rand.Read(id[:]) // never fails (crypto/rand, Go 1.24)
		return nil, sdk.URLElicitationRequiredError([]*sdk.ElicitParams{{Mode: "url", Message: msg, URL: url, ElicitationID: hex.EncodeToString(id[:])}}), true
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": engine.CodeConnectionRequired,
		"message": msg + " Show the user the URL connect_at: it opens the provider's sign-in (valid 10 minutes, once).",
		"details": map[string]any{"provider": provider, "scopes": scopes, "missing_scopes": missing}, "connect_at": url}})
	return errorResult(string(b)), nil, true
}
