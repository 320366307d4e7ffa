package mcp

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
)

// An upstream's questions (issue 48 point 4). The engine declares upstream
// the elicitation capability (form and URL), and no other a client can
// have: sampling and roots requests are refused at once, "method not
// found" (-32601). An
// elicitation/create is the question of one call in flight, put to that
// call's person by the call's asker (Call.OnAsk → engine.Prepared.Ask):
//
//   - an upstream of 2026-07-28 asks by input_required, which the SDK's
//     client fulfils on the call's own context: the asker is found there;
//   - an upstream of 2025 sends elicitation/create on its session (on the
//     call's response stream or on the session's standalone one), which
//     names no call. The question is the call's when it is the only call
//     in flight on that session (as log messages, notices.go), and is
//     refused otherwise: a session is shared by the calls of one server
//     and credential set, and a question must never reach the wrong
//     person.
//
// A question nobody can be asked is answered at once with a JSON-RPC
// error: no call waits out its timeout for it.

// askFunc puts a question to the person of one call; schema is its
// requestedSchema as the upstream wrote it (held.go), nil when not held.
type askFunc func(p *sdk.ElicitParams, schema json.RawMessage) (*sdk.ElicitResult, error)

// askKey carries a call's askFunc on its context, through the SDK, to
// onElicit (valueless lets it through).
type askKey struct{}

// capabilities are what the engine declares upstream: elicitation in both
// modes, since a call's client may be asked; no roots and no sampling.
func capabilities() *sdk.ClientCapabilities {
	return &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{
		Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}}
}

// codeNotAsked answers an elicitation nobody was asked: the request was
// valid, the engine could not put it to anyone.
const codeNotAsked = jsonrpc.CodeInvalidRequest

// refuseUnsupported is the sessions' receiving middleware: sampling and
// roots requests are refused (the engine has no model to lend and no
// roots to show), where the SDK would answer roots/list with an empty
// list.
func refuseUnsupported(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "sampling/createMessage", "roots/list":
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
				Message: "blindexec does not serve " + method + " to the MCP servers it calls"}
		}
		return next(ctx, method, req)
	}
}

// onElicit is the sessions' ElicitationHandler.
func (m *Manager) onElicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	schema := m.heldSchemaOf(req.Session, req.Params) // taken, asked or not
	ask, _ := ctx.Value(askKey{}).(askFunc)
	if ask == nil {
		ask = m.notices.onlyAsker(req.Session)
	}
	if ask == nil {
		m.logUnattributed(ctx, "upstream MCP question not attributable to one call: refused")
		return nil, &jsonrpc.Error{Code: codeNotAsked,
			Message: "elicitation refused: blindexec cannot tell which of the calls in flight on this session asks"}
	}
	return ask(req.Params, schema)
}

// asker is the askFunc of a call to srv: its question, as the upstream
// wrote it, goes to call.OnAsk; the upstream learns the action and
// content the person answered, nothing else.
func asker(srv *serverConfig, onAsk func(engine.Question) (engine.Answer, error)) askFunc {
	return func(p *sdk.ElicitParams, schema json.RawMessage) (*sdk.ElicitResult, error) {
		q := engine.Question{Server: srv.name, Message: p.Message, Mode: p.Mode, URL: p.URL, ElicitationID: p.ElicitationID}
		if q.Mode == "" {
			q.Mode = engine.QuestionForm
		}
		q.Schema = schema
		if q.Schema == nil && p.RequestedSchema != nil {
			b, err := json.Marshal(p.RequestedSchema)
			if err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestedSchema: " + err.Error()}
			}
			q.Schema = b
		}
		ans, err := onAsk(q)
		if err != nil {
			msg := "elicitation not answered: " + err.Error()
			if _, ok := errors.AsType[*engine.NobodyToAskError](err); ok {
				msg = "elicitation refused: " + err.Error()
			}
			return nil, &jsonrpc.Error{Code: codeNotAsked, Message: msg}
		}
		return &sdk.ElicitResult{Action: ans.Action, Content: ans.Content}, nil
	}
}

// onlyAsker is the askFunc of the only call in flight on cs, nil when
// there is none or more than one.
func (n *notices) onlyAsker(cs *sdk.ClientSession) askFunc {
	n.mu.Lock()
	defer n.mu.Unlock()
	ls := n.logs[cs]
	if len(ls) != 1 {
		return nil
	}
	for l := range ls {
		return l.ask
	}
	return nil
}
