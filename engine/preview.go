package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
)

// SetAtSend is the value shown for what the engine adds to a request
// only when it sends it: credentials, OAuth2 tokens, trace headers.
const SetAtSend = "(set at send time)"

// Preview is a call prepared up to the request it would send, unsent:
// what a person confirms (issue 33), Plan.Person.
type Preview struct {
	// Plugin is the plugin the call is: the catalog row an inline plugin
	// bound to, or the plugin given.
	Plugin *plugins.Plugin
	// Request is the request as it will be sent, masked: the URL and
	// body with the credentials' values masked, and the parts the
	// engine sets only at send time (credentials, the OAuth2 token)
	// named with the value SetAtSend.
	Request *SentRequest
	// Digest binds a decision to this exact call: a hex sha256 of the
	// plugin (execution, auth config, fixed params), where an MCP
	// plugin's server is (Server.Digest), the arguments with
	// the fixed params merged, the request's method, URL and body, and
	// the credential keys the call takes, and from where, a stored one
	// with its version (CredentialVersioner). Tokens the engine fetches
	// itself (OAuth2) are not in it.
	Digest string
}

// preview builds the request prep would send, sending nothing: what a
// person approves. The connection a call needs is checked first: a
// call that could not be sent asks to connect before it asks to
// confirm. An http request built is kept for the send (Prepared.built).
func (e *Executor) preview(ctx context.Context, call *Call, prep *Prepared) (*Preview, *RefusedError) {
	p := prep.Plugin
	if provider := p.AuthConfig.ConnectionProvider(); provider != "" {
		if err := e.Connections.Connected(ctx, call.UserID, provider, p.AuthConfig.OAuth2.Scopes); err != nil {
			if refused, ok := errors.AsType[*RefusedError](connectionError(provider, err)); ok {
				return nil, refused
			}
			return nil, refuse(CodeAuthError, "the connection to %s cannot be checked: %v", provider, err)
		}
	}
	var req *SentRequest
	if p.ExecType() == plugins.TypeHTTP {
		out, err := buildRequest(p, prep.Arguments, prep.schema)
		if err == nil {
			var hr *http.Request
			if hr, err = out.newRequest(ctx); err == nil {
				req = httpSent(hr, nil, out.body)
				prep.built = out
			}
		}
		if err != nil {
			if refused, ok := errors.AsType[*RefusedError](err); ok {
				return nil, refused
			}
			return nil, refuse(CodeInvalidArguments, "invalid arguments: %v", err)
		}
	} else {
		body, err := json.Marshal(map[string]any{"name": p.Execution.ToolName, "arguments": prep.Arguments})
		if err != nil {
			return nil, refuse(CodeInvalidArguments, "invalid arguments: %v", err)
		}
		req = &SentRequest{Method: "tools/call", URL: "mcp:" + p.Execution.MCPID, Body: string(body)}
	}
	// The server the decision read, judged: never read again (serverRead).
	if srv, ok, err := prep.server.of(ctx, p); err != nil {
		return nil, refuse(CodeInvalidPlugin, "the tool %s: where it sends cannot be read: %v", p.Name, err)
	} else if ok {
		prep.Destination = srv.Digest
	}
	cfg := prep.server.auth(ctx, p)
	req = prep.shown(req)
	req.Headers = append(req.Headers, setAtSend(cfg)...)

	sources, err := e.credentialSources(ctx, call, prep)
	if err != nil {
		return nil, &RefusedError{ToolError{Code: CodeAuthError, Message: "the credential store failed: " + err.Error()}}
	}
	digest, err := digestOf(p, cfg, prep.Destination, prep.Arguments, req, sources)
	if err != nil {
		return nil, refuse(CodeInvalidArguments, "invalid arguments: %v", err)
	}
	return &Preview{Plugin: p, Request: req, Digest: digest}, nil
}

// shown is req, built or sent for prep, as it may be shown: to the person
// approving it (preview, onerow81) and to the caller asking for the trace
// (Executor.complete, trace82) alike, masked by the call's masker and the
// plugin's own secrets with it (staticHeaders, staticSecrets). It marks
// req's static headers.
func (prep *Prepared) shown(req *SentRequest) *SentRequest {
	e := &prep.Plugin.Execution
	staticHeaders(req, e.Headers)
	return req.masked(auth.MaskerFor(prep.ids, prep.Credentials, slices.Concat(prep.derived(), staticSecrets(e))...))
}

// staticHeaders marks as credentials, shown as such, the headers of req
// the plugin sets itself (execution.headers, as written): an
// administrator's key pasted there rather than stored as a credential is
// not the person's to see (onerow81), as it is not another origin's
// (HTTPInvoker's sensitive headers). A method override is what the call
// does: shown.
func staticHeaders(req *SentRequest, static map[string]string) {
	for i, h := range req.Headers {
		for name, v := range static {
			if strings.EqualFold(h.Name, name) && h.Value == v && !plugins.MethodOverride(plugins.InHeader, name) {
				req.Headers[i].Credential = true
			}
		}
	}
}

// staticSecrets are the values of the credential parameters
// (redact.CredentialParam) the plugin sets itself, its base_url's (path
// and query: redact.Credentials) and execution.query's, as written and as
// sent: masked in what a person approves (onerow81), who sees the rest.
func staticSecrets(e *plugins.Execution) []string {
	out := redact.Credentials(e.BaseURL)
	for k, v := range e.Query {
		if redact.CredentialParam(k) {
			out = append(out, v, escapeQuery(v))
		}
	}
	return out
}

// CredentialVersioner tells versions of stored credentials that change
// on every write (*auth.CredentialService implements it: a hash of the
// ciphertext). A CredentialResolver without it binds stored keys by name.
type CredentialVersioner interface {
	Versions(ctx context.Context, userID int64, keys []string) (map[string]string, error)
}

// credentialSources lists the credential keys a prepared call takes and
// from where, sorted: "KEY=payload", or "KEY=stored:<version>" so that a
// stored value written since makes a digest differ. Tokens the engine
// fetches itself (OAuth2) are no credential key.
func (e *Executor) credentialSources(ctx context.Context, call *Call, prep *Prepared) ([]string, error) {
	keys := slices.Sorted(maps.Keys(prep.Credentials))
	var stored []string
	for _, k := range keys {
		if call.Credentials[k] == "" {
			stored = append(stored, k)
		}
	}
	versions := map[string]string{}
	if v, ok := e.Credentials.(CredentialVersioner); ok && len(stored) > 0 {
		var err error
		if versions, err = v.Versions(ctx, call.UserID, stored); err != nil {
			return nil, err
		}
	}
	sources := make([]string, len(keys))
	for i, k := range keys {
		sources[i] = k + "=payload"
		if call.Credentials[k] == "" {
			sources[i] = k + "=stored:" + versions[k]
		}
	}
	return sources, nil
}

// setAtSend names what cfg adds to a request at send time, each marked a
// credential with the value SetAtSend; a query parameter or cookie is
// named as "?name" or "Cookie: name".
func setAtSend(cfg plugins.AuthConfig) []SentHeader {
	var out []SentHeader
	add := func(name string) { out = append(out, SentHeader{Name: name, Value: SetAtSend, Credential: true}) }
	switch cfg.Type {
	case plugins.AuthBearer, plugins.AuthBasic, plugins.AuthOAuth2:
		add("Authorization")
	}
	for _, m := range cfg.ExtraMapping() {
		switch m.Location {
		case plugins.InQuery:
			add("?" + m.Target)
		case plugins.InCookie:
			add("Cookie: " + m.Target)
		default:
			add(m.Target)
		}
	}
	return out
}

// digestOf is Preview.Digest.
func digestOf(p *plugins.Plugin, cfg plugins.AuthConfig, destination string, args map[string]any, req *SentRequest, creds []string) (string, error) {
	b, err := json.Marshal(struct {
		Name        string             `json:"name"`
		Execution   plugins.Execution  `json:"execution"`
		Auth        plugins.AuthConfig `json:"auth"`
		Destination string             `json:"destination,omitempty"`
		FixedParams map[string]any     `json:"fixed_params"`
		Arguments   map[string]any     `json:"arguments"`
		Request     *SentRequest       `json:"request"`
		Credentials []string           `json:"credentials"`
	}{p.Name, p.Execution, cfg, destination, p.FixedParams, args, req, creds})
	if err != nil {
		return "", fmt.Errorf("digest: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
