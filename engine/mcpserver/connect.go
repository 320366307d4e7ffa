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
// account at a provider (issue 34), and names the page where a person
// connects accounts themselves; the API implements it over
// connections.Service.
type Connector interface {
	StartURL(ctx context.Context, userID int64, provider string, scopes []string) (string, error)
	// ConnectionsPage is the console's page where a signed-in user
	// connects accounts ("" when the engine has no browser address):
	// no capability, a person signs in there first.
	ConnectionsPage() string
}

// connect answers a call refused for want of the user's connection. A
// client that declared URL elicitation gets the specification's
// URL-elicitation-required error, a fresh start URL for the client to
// offer the person; any other a tool error naming the provider and the
// console's connections page — never the start URL, which the client
// would hand to the model (issue 44 point 6): a model reading a
// single-use sign-in link can pass it to someone who then links their
// own account to this user. The client calls the tool again once the
// user has connected. ok is false for any other result, without a
// Connector, or when no start URL can be made (the engine's error then
// stands).
func (ss *session) connect(ctx context.Context, e *entry, args json.RawMessage, res *engine.Result, client peer, st *requestState) (_ sdk.Result, _ error, ok bool) {
	c := ss.svc.opts.Connector
	if c == nil || res == nil || res.OK {
		return nil, nil, false
	}
	provider, scopes, missing, ok := engine.NeededConnection(res.Error)
	if !ok {
		return nil, nil, false
	}
	msg := fmt.Sprintf("Connect your %s account to let this tool act for you, then call it again.", provider)
	if res.HTTPStatus == 0 {
		msg = fmt.Sprintf("Connect your %s account to let this tool act for you, then call it again; nothing was sent.", provider)
	}
	// A 2026-07-28 retry still not connected (declined, or not finished)
	// is told, not asked again in the client's own retry loop.
	if _, urlMode := elicitation(client); urlMode && (st == nil || !ss.modern(client)) {
		url, err := c.StartURL(ctx, ss.user, provider, scopes)
		if err != nil {
			ss.svc.log.WarnContext(ctx, "no start URL for a connection the call needs; the client reads the error", "provider", provider, "err", err)
			return nil, nil, false
		}
		var id [16]byte
		rand.Read(id[:]) // never fails (crypto/rand, Go 1.24)
		if ss.modern(client) {
			// 2026-07-28: asked by input_required, the retry bound by a
			// sealed state like a confirmation's.
			state, err := ss.stateFor(e, args, nil, "", modeConnect)
			if err != nil {
				ss.svc.log.ErrorContext(ctx, "MCP input_required not answered", "err", err)
				return nil, nil, false
			}
			return inputRequired{&sdk.CallToolResult{RequestState: state, InputRequests: sdk.InputRequestMap{inputConnect: &sdk.ElicitParams{
				Mode: "url", Message: msg, URL: url, ElicitationID: hex.EncodeToString(id[:])}}}}, nil, true
		}
		return nil, sdk.URLElicitationRequiredError([]*sdk.ElicitParams{{Mode: "url", Message: msg, URL: url, ElicitationID: hex.EncodeToString(id[:])}}), true
	}
	te := map[string]any{"code": engine.CodeConnectionRequired,
		"message": msg + " Ask the user to connect it in the engine's console (Connections); no sign-in link is given here.",
		"details": map[string]any{"provider": provider, "scopes": scopes, "missing_scopes": missing}}
	if page := c.ConnectionsPage(); page != "" {
		te["connect_in"] = page
	}
	b, _ := json.Marshal(map[string]any{"error": te})
	return errorResult(string(b)), nil, true
}
