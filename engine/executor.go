// Package engine is the blind executor: it turns an LLM's tool call into
// the request the plugin's execution config describes, with the user's
// credentials applied, and turns the answer into a bounded, masked value
// the LLM can read. The LLM never sees execution, auth or credentials.
//
// Defaults (each overridable; see the Executor fields and the plugin's
// execution config):
//
//   - timeout per call: execution.timeout_ms, else DefaultTimeout (30 s),
//     never more than Executor.MaxTimeout (DefaultMaxTimeout, 60 s);
//   - retries: idempotent methods only (GET, HEAD, PUT, DELETE, OPTIONS),
//     on connection errors, 429 and 502–504; execution.retry, else 3
//     attempts, 100 ms first backoff doubling with jitter, 2 s cap on one
//     wait (Retry-After included); oauth2 calls answered 401 get a fresh
//     token and one more attempt, whatever the method;
//   - bytes read from an upstream: Executor.MaxResponseBytes
//     (DefaultMaxResponseBytes, 10 MiB) after decompression; a larger
//     success body is the error response_too_large (nothing past the cap
//     is read, so a 1 GB body never enters memory);
//   - output budget: execution.response.max_bytes, else DefaultOutputBytes
//     (32 KiB), cut with a visible "…[truncated: N bytes total]" marker;
//   - error excerpts: the first ErrorExcerptBytes (2 KiB) of a non-2xx body.
package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/internal/jsonlimit"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/quota"
	"github.com/blindexec/blindexec/tracing"
)

// Defaults of the Executor and of plugins that leave a setting out.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxTimeout       = 60 * time.Second
	DefaultMaxResponseBytes = 10 << 20
	DefaultOutputBytes      = 32 << 10
	ErrorExcerptBytes       = 2 << 10
)

// Error codes of a ToolError. The first group are refusals: nothing was
// sent.
const (
	CodeInvalidArguments   = "invalid_arguments"
	CodeMissingCredentials = "missing_credentials"
	CodePluginDisabled     = "plugin_disabled"
	CodeInvalidPlugin      = "invalid_plugin" // a plugin the engine cannot execute (unknown type, contradictory placement)
	// CodeCredentialNotBound: an inline plugin whose call would take a
	// stored credential is not the enabled catalog plugin of its name
	// (auth.Catalog.Bind), or an MCP server moved away from the origin
	// its stored credentials were given for (HostMovedError), or a call
	// of a plugin that is no catalog row would send a stored key to an
	// origin the enabled catalog plugins do not send it to
	// (auth.ElsewhereError; details: key, origin, catalog_origins).
	CodeCredentialNotBound = "credential_not_bound"
	// CodeFixedParamsNotAllowed: a payload's fixed_params would rewrite
	// the catalog's or set a parameter the schema does not declare.
	CodeFixedParamsNotAllowed = "fixed_params_not_allowed"

	CodeHTTPError        = "http_error" // the upstream answered non-2xx
	CodeTimeout          = "timeout"
	CodeTransportError   = "transport_error" // connection refused or reset, TLS, canceled
	CodeEgressDenied     = "egress_denied"   // the destination is a forbidden address
	CodeResponseTooLarge = "response_too_large"
	CodeAuthError        = "auth_error" // credentials could not be applied (token endpoint, credential store)

	// CodeQuotaExceeded refuses a call over a quota rule (the HTTP API
	// answers 429 with Retry-After); CodeQuotaUnavailable one whose quota
	// cannot be checked (the database is unreachable and the replica holds
	// no allowance).
	CodeQuotaExceeded    = "quota_exceeded"
	CodeQuotaUnavailable = "quota_unavailable"

	// CodeConnectionRequired refuses a call of a plugin using a per-user
	// connection (oauth2 grant authorization_code) whose user has no
	// working connection to its provider, or one lacking scopes the tool
	// needs: nothing was sent. Details: {"provider", "scopes",
	// "missing_scopes"}; the user connects (POST
	// /v1/connections/{provider}/authorize) and the call is made again.
	// A call whose refresh the provider refused after a 401 ends with it
	// too, as an error rather than a refusal.
	CodeConnectionRequired = "connection_required"

	// CodeRecordsUnavailable refuses a call that could not be recorded
	// (the record spool is full): nothing was sent, nothing recorded.
	CodeRecordsUnavailable = "records_unavailable"

	// CodeDatabaseUnavailable refuses a call past the outage grace
	// (Executor.Fresh): what the engine holds cannot be revalidated.
	// Nothing was sent.
	CodeDatabaseUnavailable = "database_unavailable"

	// CodeConfirmationStale refuses a call a person approved whose
	// request, prepared again, is not the one approved: its plugin, its
	// MCP server, arguments or credentials changed. Nothing was sent.
	CodeConfirmationStale = "confirmation_stale"
	// CodeConfirmationRequired refuses a call waiting for a person's
	// approval from a caller that cannot ask one (Execute).
	CodeConfirmationRequired = "confirmation_required"
	// CodePermissionDenied: the call's user may not use the plugin
	// (issue 46); the refusal names the plugin and the perms it needs.
	CodePermissionDenied = access.CodeDenied
	// CodePermissionsUnavailable: the user's permissions could not be
	// read, so the call is refused rather than opened.
	CodePermissionsUnavailable = access.CodeUnavailable
)

// CredentialResolver is the credential store: it returns the plaintext
// values it holds for a user among keys (absent keys are left out).
type CredentialResolver interface {
	Resolve(ctx context.Context, userID int64, keys []string) (map[string]string, error)
}

// Connections hands out the access tokens of users' connections to OAuth
// providers; *connections.Service implements it.
type Connections interface {
	// Token returns the user's access token at provider for a request to
	// origin by a tool needing scopes; a *connections.RequiredError or an
	// error wrapping connections.ErrOriginNotAllowed refuses the call.
	Token(ctx context.Context, userID int64, provider string, scopes []string, origin string) (connections.Token, error)
	// Rejected is told of a 401 answering tok: a token to retry with and
	// true, or false to keep the answer.
	Rejected(ctx context.Context, userID int64, provider string, scopes []string, origin string, tok connections.Token) (connections.Token, bool, error)
	// Connected returns nil when the user has a working connection
	// granting scopes, else a *connections.RequiredError (the
	// decision's check before a person is asked: nothing is sent).
	Connected(ctx context.Context, userID int64, provider string, scopes []string) error
}

// CatalogRules is what the catalog decides about stored credentials
// (*auth.Catalog implements it).
type CatalogRules interface {
	// Bind returns the enabled catalog plugin the inline plugin p, whose
	// call would take storedKeys from the store, stands for; an error
	// wrapping auth.ErrCredentialNotBound refuses the call.
	Bind(ctx context.Context, p *plugins.Plugin, storedKeys []string) (*plugins.Plugin, error)
	// Identifiers returns those of keys the catalog reads only as
	// identifiers: the masking classes of stored credentials.
	Identifiers(ctx context.Context, keys []string) ([]string, error)
	// Row returns the enabled catalog plugin named name, nil when there
	// is none: what an inline plugin named like it is judged as by the
	// access rule, bound or not.
	Row(ctx context.Context, name string) (*plugins.Plugin, error)
	// Copy returns the enabled catalog plugin the inline plugin p is a
	// copy of (Bind's equality), nil when none: the plugin a call of p
	// taking nothing from the store is.
	Copy(ctx context.Context, p *plugins.Plugin) (*plugins.Plugin, error)
	// Elsewhere returns nil when the call of p, no catalog row, may take
	// keys from the store: none goes to an origin the enabled catalog
	// plugins do not send it to while catalog plugins read it; else an
	// *auth.ElsewhereError. srv is p's server as the call reads it
	// (ServerReaders).
	Elsewhere(ctx context.Context, p *plugins.Plugin, srv auth.ServerSends, keys []string) error
}

// Access is who may use which plugin (issue 46); *access.Checker
// implements it.
type Access interface {
	// Allowed returns nil when sub may use p, an *access.DeniedError when
	// not, an *access.UnavailableError when the user's permissions could
	// not be read.
	Allowed(ctx context.Context, sub access.Subject, p *plugins.Plugin) error
	// Usable is Allowed over a list: those of ps sub may use, in order
	// (the list rule: a refused agent or unreadable permissions refuse
	// the list).
	Usable(ctx context.Context, sub access.Subject, ps []*plugins.Plugin) ([]*plugins.Plugin, error)
}

// Tokens reads per-user tokens as they are now (*api.Server implements
// it, over its cache that follows the tokens' change counter).
type Tokens interface {
	// Perms returns the fixed perms of user's token id: nil when it has
	// none, an empty set when it was revoked or has expired (it grants
	// nothing); an error when it could not be read.
	Perms(ctx context.Context, user, id int64) (access.Held, error)
}

// Call is one tool call.
type Call struct {
	Plugin *plugins.Plugin
	// Arguments as the LLM produced them; they may be invalid JSON.
	Arguments json.RawMessage
	UserID    int64 // 0: anonymous (the credential store is not consulted)
	// Credentials from the runtime payload, in plaintext; they win over
	// the store.
	Credentials map[string]string
	// FixedParams from the runtime payload: they may only fill parameters
	// the plugin's schema declares and its own fixed_params leave open
	// (the catalog's always win); anything else refuses the call
	// (CodeFixedParamsNotAllowed).
	FixedParams map[string]any
	RunID       string
	// Inline says the caller defined Plugin itself (a payload's plugin)
	// rather than naming a catalog row. An inline plugin whose call would
	// take credentials from the store is held to the binding rule
	// (auth.Catalog.Bind) unless Owner is the administrator, who defines
	// the catalog; payload credentials are the caller's own, so a call
	// taking them all from the payload is not bound. An inline plugin left
	// unbound is classified (consequential or not) by its own setting
	// only when Owner is the service or the administrator.
	Inline bool
	// Owner is the kind of principal that owns the work the call is part
	// of: the one who started a run, on its resume too, never whoever
	// resumes it. The zero value is the strictest, a user.
	Owner Owner
	// Policy is the confirmation policy the call is decided under (the
	// run's; the operator's for a per-user token's direct call and an MCP
	// client's); "" when the caller is its own loop (the service and admin
	// tokens' direct calls): nothing waits for a person.
	Policy confirm.Policy
	// Approval is a person's approval of a request prepared earlier under
	// a pending id: the call is sent when the request prepared now has
	// the approved digest, else refused as CodeConfirmationStale. An
	// approved call is sent once and never retried once it may have
	// reached the upstream, idempotent or not — the one resend with a
	// fresh token after an OAuth2 401 aside.
	Approval *Approval
	// Narrow are the call's further sources of the user's permission
	// strings (a service payload's user.permissions, the fixed perms of a
	// per-user token the call does not name), each of which must grant
	// the plugin (access.Subject).
	Narrow []access.Held
	// Token names the per-user token the call is made with (its
	// sys_ai_token.token_id; 0: none): its fixed perms are not the
	// caller's copy but read at each decision (Executor.Tokens), since a
	// run, an MCP session or a call waiting for a person outlives the
	// request that read them, and a token narrowed or revoked since is
	// decided as it is now.
	Token int64
	// Agent names the agent the call is made within (a run's, an MCP
	// server's of /mcp/agents/{name}, a direct call's): the access step
	// refuses a plugin outside it, an agent the user may not use, an
	// unknown or disabled one (access.Subject.Agent).
	Agent string
	// Trace asks for the request sent (Result.Request), masked: the
	// administrator's "Try it". Without it nothing is captured.
	Trace bool
	// ToolCallID is the model's id of the call, in a run: its span's
	// gen_ai.tool.call.id.
	ToolCallID string
	// Relay hands the upstream's result back whole, as its protocol has
	// it (the MCP proxy route, seed 004 FR-004): an MCP result is the
	// output whatever its isError, within MaxResponseBytes rather than
	// the output budget. How the route renders the result, not a rule:
	// the call is decided on the plugin it is, a row as the catalog has it.
	Relay bool
}

// Result is what a call produced, as the API and the LLM loop return it.
type Result struct {
	OK         bool `json:"ok"`
	HTTPStatus int  `json:"http_status"`
	// Output is the JSON value the LLM sees, shaped and within budget;
	// null when there is none.
	Output      json.RawMessage `json:"output"`
	Error       *ToolError      `json:"error"`
	ExecutionID string          `json:"execution_id"`
	LatencyMS   int64           `json:"latency_ms"`
	Attempts    int             `json:"attempts"`
	// Request is the request sent (its last attempt), masked; only with
	// Call.Trace, never for a refused call, never recorded.
	Request *SentRequest `json:"request,omitempty"`
	// Relayed is an invoker's Relay, masked: the upstream's result whole
	// for a client of its protocol (an MCP client of /mcp), a tool error
	// included; nil for other calls. Never recorded, never the model's.
	Relayed json.RawMessage `json:"-"`
}

// ToolError is a failed call, phrased for the LLM. It is masked: it never
// holds a credential.
type ToolError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Message }

// RefusedError is returned by Execute, beside a Result carrying the same
// ToolError, when the call was refused before anything was sent (the HTTP
// API answers 422). Invokers return it for the same reason.
type RefusedError struct{ ToolError }

func refuse(code, format string, args ...any) *RefusedError {
	return &RefusedError{ToolError{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// Prepared is a call ready for an Invoker: arguments decoded, completed
// with fixed params (not with schema defaults: those are the API's),
// checked against the schema; credentials resolved.
type Prepared struct {
	Plugin *plugins.Plugin
	// Arguments are read-only: their values may be shared with the fixed
	// params.
	Arguments   map[string]any
	Credentials map[string]string
	UserID      int64
	RunID       string
	// MaxResponseBytes caps the bytes an invoker reads from the upstream.
	MaxResponseBytes int64

	// Trace asks the invoker to report what it sends (Sent).
	Trace bool
	// Once forbids retries (Call.Approval).
	Once bool
	// Relay is Call.Relay: the invoker reports the upstream's own error
	// (an MCP result's isError) as the result, not as a failed call.
	Relay bool
	// Destination is, for a call a person approved or whose server the
	// rule of where keys go judged, the digest of the server the decision
	// read (Server.Digest): the invoker refuses to send elsewhere
	// (CodeConfirmationStale, CodeCredentialNotBound). "" otherwise.
	Destination string

	schema    *schemaInfo
	secretsMu sync.Mutex
	secrets   []string
	ids       []string // the credential keys read only as identifiers: masked as data
	// connections gives the token of the user's connection, for a plugin
	// using one (Plugin.AuthConfig.ConnectionProvider()).
	connections Connections
	token       connections.Token // the connection's token last sent
	sent        *SentRequest
	// built is the request the decision built to show a person and
	// digest (http plugins): the first attempt sends it, not another
	// preparation.
	built *outbound
	// questions are the upstream's questions asked during the call (Ask).
	questions questions
	// answers records the person's answers to them (Executor.Answers);
	// log says when it cannot.
	answers AnswerLog
	log     *slog.Logger
	// browserURL is Executor.BrowserURL, read by Ask.
	browserURL string
	// allowed is the decision's access step again, for a call naming a
	// token (Call.Token): an answer given while the call runs goes
	// upstream only if the token, as it is then, still allows the call
	// (Ask), since the person may answer minutes after the decision.
	allowed func(context.Context) *RefusedError
	// untrusted: a per-user token's inline plugin left unbound, sent
	// under the default egress policy (HTTPInvoker.Untrusted).
	untrusted bool
	// server is the plugin's server as the decision read it: the preview
	// shows and binds that read (serverRead).
	server serverRead
}

// AddSecrets registers values derived from the credentials (an oauth2
// access token, a basic-auth header) so that they are masked like the
// credentials themselves.
// An upstream's notices (Notify) read them while the call runs. The
// first slice given is kept, not copied (a copy was an allocation on
// every call): the caller does not change it afterwards.
func (p *Prepared) AddSecrets(s ...string) {
	p.secretsMu.Lock()
	if len(p.secrets) == 0 {
		p.secrets = slices.Clip(s) // a later append copies it
	} else {
		p.secrets = append(p.secrets, s...)
	}
	p.secretsMu.Unlock()
}

// derived is the secrets AddSecrets registered so far: a later append
// writes past its length (or to a new array), never into it.
func (p *Prepared) derived() []string {
	p.secretsMu.Lock()
	s := p.secrets
	p.secretsMu.Unlock()
	return s[:len(s):len(s)]
}

// Sent reports, when Trace is set, the request an attempt sent, in
// plaintext: the executor masks it (the last one reported wins).
func (p *Prepared) Sent(r *SentRequest) { p.sent = r }

// Response is what an upstream answered: the body decoded (gzip, deflate)
// and at most Prepared.MaxResponseBytes long. The executor owns it once
// returned: shaping may rewrite Body in place.
type Response struct {
	StatusCode  int
	ContentType string
	Body        []byte
	Attempts    int
	// Truncated reports a Body cut at a read limit: it may end inside an
	// echoed secret, which masking then treats as one (auth.Masker.Cut).
	Truncated bool
	// Relay, when set, is the result whole for a client of the
	// upstream's protocol (Result.Relayed); Body is then ignored.
	Relay Relay
}

// Server is the server a call goes to when it is registered apart from
// the plugin (an MCP server's row, which the API, the CLI, another replica
// or plain SQL may change), as a decision reads it (ServerReaders).
type Server struct {
	// Auth is the auth config that reads the call's credentials: it tells
	// the masker and the checks which are secrets and which identifiers.
	Auth plugins.AuthConfig
	// Sends is where the server's tools send its users' keys: what the
	// rule of where keys go (elsewhere) judges, not the catalog index's
	// copy, which lags a server registered anew under the same id
	// elsewhere until the next poll (review79).
	Sends auth.ServerSends
	// Digest is a digest of where the call goes and what it carries: an
	// approval binds it, and the invoker sends to no other row
	// (Prepared.Destination).
	Digest string
	// Moved is a *HostMovedError when the users' stored credentials were
	// given for another origin than the one the server is at now; nil
	// when they may go.
	Moved error
}

// ServerReaders is implemented by an Invoker whose destination is a
// server registered apart from the plugin: Server reads p's, as the call
// reads it. A decision reads it once (serverRead).
type ServerReaders interface {
	Server(ctx context.Context, p *plugins.Plugin) (Server, error)
}

// serverRead is the server of a decision's plugin, read once: the auth
// config reading its credentials, the rules of where they go, the preview
// a person approves and the send bound to it all take that one read, so
// that a server registered anew during the decision is never judged as
// one row and approved or sent as another (onerow81: the preview read it
// again, and the approval bound a row nothing had judged).
type serverRead struct {
	inv Invoker
	id  string // the execution.mcp_id read; "" before
	srv Server
	err error
}

// of is p's server; ok false when p's invoker reads none.
func (r *serverRead) of(ctx context.Context, p *plugins.Plugin) (srv Server, ok bool, err error) {
	sr, ok := r.inv.(ServerReaders)
	if !ok || p.Execution.MCPID == "" {
		return Server{}, false, nil
	}
	if r.id != p.Execution.MCPID {
		r.id = p.Execution.MCPID
		r.srv, r.err = sr.Server(ctx, p)
	}
	return r.srv, true, r.err
}

// auth is the auth config that reads the credentials of a call of p: its
// server's, or its own (as well when its server cannot be read: the
// checks of where keys go refuse the call then).
func (r *serverRead) auth(ctx context.Context, p *plugins.Plugin) plugins.AuthConfig {
	if srv, ok, err := r.of(ctx, p); ok && err == nil {
		return srv.Auth
	}
	return p.AuthConfig
}

// HostMovedError says a server's address moved away from the origin its
// stored credentials were given for (Given empty: given for none). Field
// is what moved: "url", or "auth_config.oauth2.token_url" (where the
// client id and secret go).
type HostMovedError struct{ Server, Field, Given, Now string }

func (e *HostMovedError) Error() string {
	given, accept := "no origin recorded (credentials_url is empty)", "credentials_url to its url"
	if e.Field != "url" {
		given, accept = "no origin recorded (credentials_token_url is empty)", "credentials_token_url to its token URL"
	}
	if e.Given != "" {
		given = e.Given
	}
	return fmt.Sprintf("the MCP server %s's %s is now at %s, but its users' stored credentials were given for %s: it changed outside the engine, so no stored credential is sent to it; an administrator registers the server again, or sets its %s once the new host is trusted", e.Server, e.Field, e.Now, given, accept)
}

// Invoker performs one execution type. Invoke returns the upstream's
// answer, whatever its status, or an error: a *RefusedError when nothing
// was sent, a *ToolError to classify a failure, anything else is a
// transport error. With an error, a non-nil Response still reports
// Attempts (and the status and body excerpt when there were some).
type Invoker interface {
	Invoke(ctx context.Context, p *Prepared) (*Response, error)
}

// Quota counts calls against the operator's quota rules; *quota.Keeper
// implements it.
type Quota interface {
	// Take counts one call of p by user, or refuses it with a
	// *quota.ExceededError or *quota.UnavailableError; undo gives the call
	// back when nothing was sent after all.
	Take(ctx context.Context, user int64, p *plugins.Plugin) (undo func(), err error)
}

// Executor executes tool calls. Its fields are settings: set them before
// the first call and do not change them afterwards.
type Executor struct {
	Credentials CredentialResolver // nil: payload credentials only
	// Catalog binds inline plugins (Call.Inline; nil refuses them
	// whenever they would use a stored credential) and classifies stored
	// credentials (nil: as the plugin's auth config reads them).
	Catalog  CatalogRules
	Recorder *Recorder    // nil: no execution records
	Metrics  *Metrics     // nil: no metrics
	Logger   *slog.Logger // nil: slog.Default()
	// MaxTimeout is the ceiling on any call's timeout (DefaultMaxTimeout
	// when zero).
	MaxTimeout time.Duration
	// MaxResponseBytes caps the bytes read from an upstream
	// (DefaultMaxResponseBytes when zero).
	MaxResponseBytes int64
	// Limiter bounds the calls each user has in flight (nil: no limit).
	// Calls of a run (Call.RunID set) are not counted: the run is.
	Limiter *UserLimiter
	// Quota counts each call once, when it is about to be sent, against
	// the operator's quota rules (nil: none).
	Quota Quota
	// Connections gives the tokens of users' connections (nil: calls of
	// plugins using one are refused).
	Connections Connections
	// Access decides who may use the plugin a call is, right after
	// binding (nil: everyone, as for the operator's own CLI).
	Access Access
	// Tokens reads a call's token (Call.Token) as it is now; nil refuses
	// every call naming one.
	Tokens Tokens
	// Answers records the person's answers to upstream questions in the
	// audit log, as the calls take them (nil: not recorded).
	Answers AnswerLog
	// Fresh says whether what the engine holds (catalog, tokens,
	// credentials, read while the database answered) may still be served:
	// an error past the outage grace (store.Watcher.Stale), which refuses
	// every call whatever started it — a stdio session, a run begun
	// within the grace (nil: always).
	Fresh func() error
	// BrowserURL is where people's browsers reach the engine
	// (BLINDEXEC_BROWSER_URL): an upstream's question linking to its host
	// is refused (Question.unshowable).
	BrowserURL string

	invokers map[string]Invoker
}

// NewExecutor returns an Executor whose http invoker sends through client,
// which must be the egress-guarded client (egress.NewClient); oauth2 token
// requests use it too.
func NewExecutor(client *http.Client) *Executor {
	e := &Executor{}
	e.Register(plugins.TypeHTTP, NewHTTPInvoker(client, nil))
	return e
}

// NewHTTPInvoker is the invoker of http plugins sending through client,
// and the calls no operator vouched for through untrusted when it is not
// nil (HTTPInvoker.Untrusted).
func NewHTTPInvoker(client, untrusted *http.Client) *HTTPInvoker {
	h := &HTTPInvoker{Client: client, Auth: auth.NewAuthenticator(client)}
	if untrusted != nil {
		h.Untrusted = &HTTPInvoker{Client: untrusted, Auth: auth.NewAuthenticator(untrusted)}
	}
	return h
}

// Register sets the invoker of an execution type (e.g. plugins.TypeMCP).
// Call it during setup, not concurrently with Execute.
func (e *Executor) Register(typ string, inv Invoker) {
	if e.invokers == nil {
		e.invokers = map[string]Invoker{}
	}
	e.invokers[typ] = inv
}

// admit takes a call slot of the user from the Limiter; release gives it
// back. Calls of a run are admitted with their run.
func (e *Executor) admit(call Call) (release func(), refused *RefusedError) {
	if call.RunID != "" {
		return func() {}, nil
	}
	release, err := e.Limiter.AcquireCall(call.UserID)
	if le, ok := errors.AsType[*LimitError](err); ok {
		return func() {}, rateLimited(le)
	}
	return release, nil
}

// takeQuota counts the call against the quota rules; a refusal says the
// rule, its limit and when it resets.
func (e *Executor) takeQuota(ctx context.Context, user int64, p *plugins.Plugin) (undo func(), refused *RefusedError) {
	undo, err := e.Quota.Take(ctx, user, p)
	if err == nil {
		return undo, nil
	}
	if ex, ok := errors.AsType[*quota.ExceededError](err); ok {
		return nil, &RefusedError{ToolError{Code: CodeQuotaExceeded, Message: ex.Error(), Details: map[string]any{
			"rule": ex.Rule, "limit": ex.Calls, "window": ex.Window,
			"resets_at":     ex.ResetsAt.Format(time.RFC3339),
			"retry_after_s": max(1, time.Until(ex.ResetsAt).Seconds()),
		}}}
	}
	return nil, &RefusedError{ToolError{Code: CodeQuotaUnavailable, Message: err.Error(),
		Details: map[string]any{"retry_after_s": DefaultRetryAfter.Seconds()}}}
}

// prepare runs the steps common to every execution type, up to the point
// where something would be sent.
func (e *Executor) prepare(ctx context.Context, call Call) (*Prepared, *RefusedError) {
	p := call.Plugin
	if !p.Enabled() {
		return nil, refuse(CodePluginDisabled, "the tool %s is disabled", p.Name)
	}
	inv := e.invokers[p.ExecType()]
	if inv == nil {
		return nil, refuse(CodeInvalidPlugin, "the tool %s has execution type %q, which this engine cannot run", p.Name, p.ExecType())
	}
	server := serverRead{inv: inv} // read once: the decision's
	cfg := server.auth(ctx, p)
	if call.Inline && call.Owner != OwnerAdmin {
		// Bind: the call of an inline copy of a catalog row is the row's,
		// and every rule below reads the row.
		if stored := e.storedKeys(call, cfg); len(stored) > 0 {
			row, refused := e.bind(ctx, &call, p, stored)
			if refused != nil {
				return nil, refused
			}
			p, cfg = row, server.auth(ctx, row)
		} else if row := e.copiedRow(ctx, p); row != nil {
			// A copy of a row taking nothing from the store (its
			// credentials in the payload, or none) is the row all the
			// same: its classification, quotas and egress are the row's,
			// never the copy's (before, a user's copy of a GET the
			// administrator classified consequential was sent unapproved).
			p, cfg = row, server.auth(ctx, row)
		}
	}
	// A per-user token's inline plugin left unbound is no one's but its
	// caller's: sent under the default egress policy (HTTPInvoker.Untrusted),
	// BLINDEXEC_EGRESS_ALLOW being the operator's opening for what the
	// operator vouches for.
	untrusted := call.Inline && call.Owner == OwnerUser && p == call.Plugin
	// Who may use p is decided here, on the plugin bound, before anything
	// else reads it.
	if refused := e.allowed(ctx, &call, p); refused != nil {
		return nil, refused
	}
	judged := p
	if provider := cfg.ConnectionProvider(); provider != "" {
		if refused := e.connectionUsable(call, p, provider); refused != nil {
			return nil, refused
		}
	}
	schema, err := schemaOf(p)
	if err != nil {
		return nil, refuse(CodeInvalidPlugin, "the tool %s has invalid parameters: %v", p.Name, err)
	}
	args, err := decodeArguments(call.Arguments)
	if err != nil {
		refused := &RefusedError{ToolError{Code: CodeInvalidArguments, Message: "invalid arguments: " + err.Error()}}
		var le *jsonlimit.Error
		if errors.As(err, &le) {
			refused.Details = map[string]any{"limit": le.Limit, "max": le.Max}
		}
		return nil, refused
	}
	if refused := checkPayloadFixedParams(p, schema, call.FixedParams); refused != nil {
		return nil, refused
	}
	p.StripOmitted(args)
	// What the LLM did not give is not sent: a schema's default describes
	// what the API does without the value (fixed_params force one). The
	// payload's fixed params fill what the plugin's leave open; the
	// plugin's (the catalog's) always win.
	maps.Copy(args, call.FixedParams)
	maps.Copy(args, p.FixedParams)
	errs := unknownArguments(args, schema, p)
	for _, fe := range p.ValidateArguments(args) {
		// additionalProperties: false says it too; once, with the known ones, is enough.
		if !slices.ContainsFunc(errs, func(u plugins.FieldError) bool { return u.Field == fe.Field }) {
			errs = append(errs, fe)
		}
	}
	if len(errs) > 0 {
		return nil, invalidArguments(errs)
	}
	p = classified(&call, p, args)
	required, keys := credentialKeys(p)
	creds, stored, err := e.resolveCredentials(ctx, call, keys, cfg.MayBeEmpty)
	if err != nil {
		return nil, &RefusedError{ToolError{Code: CodeAuthError, Message: "the credential store failed: " + err.Error()}}
	}
	if refused := hostMoved(ctx, &server, p, stored); refused != nil {
		return nil, refused
	}
	sent, refused := e.elsewhere(ctx, &call, &server, p, stored)
	if refused != nil {
		return nil, refused
	}
	prep := &Prepared{
		Plugin:           p,
		Arguments:        args,
		Credentials:      creds,
		UserID:           call.UserID,
		RunID:            call.RunID,
		Trace:            call.Trace,
		MaxResponseBytes: cmp.Or(e.MaxResponseBytes, DefaultMaxResponseBytes),
		Relay:            call.Relay,
		schema:           schema,
		ids:              e.identifiers(ctx, cfg, stored),
		connections:      e.Connections,
		answers:          e.Answers,
		log:              e.logger(),
		browserURL:       e.BrowserURL,
		untrusted:        untrusted,
		Destination:      sent,
		server:           server,
	}
	if call.Token != 0 {
		prep.allowed = func(ctx context.Context) *RefusedError { return e.allowed(ctx, &call, judged) }
	}
	if missing := missingCredentials(required, creds, cfg.MayBeEmpty); len(missing) > 0 {
		return prep, &RefusedError{ToolError{
			Code:    CodeMissingCredentials,
			Message: missingCredentialsMessage(missing, call.UserID),
			Details: map[string]any{"missing": missing},
		}}
	}
	if err := auth.CheckSecretLengths(prep.ids, creds); err != nil {
		return prep, refuse(CodeAuthError, "a credential cannot be sent: %v", err)
	}
	return prep, nil
}

// missingCredentialsMessage says which keys a call lacks and where they
// come from; a call naming no user says so, since a caller who forgot the
// user id would otherwise look for credentials that are stored.
func missingCredentialsMessage(keys []string, userID int64) string {
	where := "store them for the user or pass them in the payload"
	if userID == 0 {
		where = "the call names no user (user_id), so no stored credential applies: name the user or pass them in the payload"
	}
	return "missing credentials: " + strings.Join(keys, ", ") + " (" + where + ")"
}

// hostMoved refuses a call that would send stored credentials to a
// server moved away from the origin they were given for, whichever way
// it moved (the API, the console, the CLI or SQL: the row as it is).
func hostMoved(ctx context.Context, server *serverRead, p *plugins.Plugin, stored []string) *RefusedError {
	if len(stored) == 0 {
		return nil
	}
	srv, ok, err := server.of(ctx, p)
	if !ok {
		return nil
	}
	if err == nil {
		err = srv.Moved
	}
	if err == nil {
		return nil
	}
	if moved, ok := errors.AsType[*HostMovedError](err); ok {
		return &RefusedError{ToolError{Code: CodeCredentialNotBound, Message: moved.Error(),
			Details: map[string]any{"mcp_server": moved.Server, "field": moved.Field, "given_for": moved.Given, "now": moved.Now}}}
	}
	// Unread, the server could be read moved at the send: refused, as a
	// preview's unreadable destination is.
	return refuse(CodeInvalidPlugin, "the tool %s: where its stored credentials would go cannot be read, so none is sent: %v", p.Name, err)
}

// elsewhere refuses a call of p, no catalog row, that would send a stored
// key to an origin the enabled catalog plugins do not send it to while
// catalog plugins read it (auth.Catalog.Elsewhere, the rule an import
// decides its rows by): a lookalike MCP server registered reading a key
// the catalog sends to another API is sent no user's key through the
// proxy's tool without a row (hosts76). A catalog row's call, the row as
// it is now (current, bind), is the catalog's own; so are the
// administrator's inline plugins, which bind does not hold either. No
// catalog: nothing to compare with (the stored keys' binding refuses an
// inline plugin then).
// The digest of the server row judged, "" when none was, is where the
// call may go (Prepared.Destination).
func (e *Executor) elsewhere(ctx context.Context, call *Call, server *serverRead, p *plugins.Plugin, stored []string) (string, *RefusedError) {
	if len(stored) == 0 || p.Catalog || e.Catalog == nil || call.Inline && call.Owner == OwnerAdmin {
		return "", nil
	}
	srv, _, err := server.of(ctx, p) // an invoker that cannot say: an origin not fixed
	if err != nil {
		// Unread, nothing says where the call would go.
		return "", refuse(CodeInvalidPlugin, "the tool %s: where its stored credentials would go cannot be read, so none is sent: %v", p.Name, err)
	}
	err = e.Catalog.Elsewhere(ctx, p, srv.Sends, stored)
	if err == nil {
		return srv.Digest, nil
	}
	if ee, ok := errors.AsType[*auth.ElsewhereError](err); ok {
		return "", &RefusedError{ToolError{Code: CodeCredentialNotBound,
			Message: ee.Error() + fmt.Sprintf("; nothing was sent: an administrator enables a catalog row sending %s there once that host may have the users' %s", ee.Key, ee.Key),
			Details: map[string]any{"key": ee.Key, "origin": ee.Origin, "catalog_origins": ee.Origins()}}}
	}
	return "", refuse(CodeAuthError, "the catalog could not be read to check where stored credentials go: %v", err)
}

// checkPayloadFixedParams refuses a payload's fixed params that would
// rewrite the plugin's own (the catalog's: the administrator's decision)
// or set a parameter its schema does not declare (which no argument
// could reach).
func checkPayloadFixedParams(p *plugins.Plugin, schema *schemaInfo, fixed map[string]any) *RefusedError {
	if len(fixed) == 0 { // every call but a service payload's: no sorted copy of no keys
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(fixed)) {
		reason := ""
		if v, ok := p.FixedParams[name]; ok && !reflect.DeepEqual(v, fixed[name]) {
			reason = "the tool's own fixed_params set it, and they always win"
		} else if _, declared := schema.props[name]; !declared {
			reason = "the tool's parameters do not declare it; a payload's fixed_params may only fill declared parameters"
		}
		if reason != "" {
			return &RefusedError{ToolError{Code: CodeFixedParamsNotAllowed,
				Message: fmt.Sprintf("fixed_params.%s: not allowed: %s", name, reason),
				Details: map[string]any{"field": "fixed_params." + name}}}
		}
	}
	return nil
}

// unknownArguments reports the arguments the schema does not declare
// (nor the platform fixed), unless it admits extras (additionalProperties
// other than false): an LLM cannot invent a header or query parameter, and
// a misspelt argument is said, not dropped.
func unknownArguments(args map[string]any, schema *schemaInfo, p *plugins.Plugin) []plugins.FieldError {
	if schema.extras {
		return nil
	}
	isFixed := func(name string) bool {
		_, ok := p.FixedParams[name]
		return ok
	}
	var unknown []string
	for name := range args {
		if _, declared := schema.props[name]; !declared && !isFixed(name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	var known []string
	for name := range schema.props {
		if !isFixed(name) {
			known = append(known, name)
		}
	}
	slices.Sort(known)
	hint := "this tool takes no arguments"
	if len(known) > 0 {
		hint = "the known ones are " + strings.Join(known, ", ")
	}
	errs := make([]plugins.FieldError, len(unknown))
	for i, name := range unknown {
		errs[i] = plugins.FieldError{Field: name, Message: "is not a known argument (" + hint + ")"}
	}
	return errs
}

func invalidArguments(errs []plugins.FieldError) *RefusedError {
	msgs := make([]string, len(errs))
	for i, fe := range errs {
		msgs[i] = fe.Sentence()
	}
	return &RefusedError{ToolError{
		Code:    CodeInvalidArguments,
		Message: "invalid arguments: " + strings.Join(msgs, "; "),
		Details: errs,
	}}
}

// resolveCredentials takes keys from the payload, then asks the store for
// the user for those still missing; fromStore lists the keys it gave. An
// empty value is no credential, unless mayBeEmpty says the key's is (a
// basic-auth password). The map may be nil (no credentials) and is only
// read.
func (e *Executor) resolveCredentials(ctx context.Context, call Call, keys []string, mayBeEmpty func(string) bool) (creds map[string]string, fromStore []string, err error) {
	missing := keys // a payload without credentials (the usual call): every key is the store's, no copy
	if len(call.Credentials) > 0 {
		missing = nil
		for _, k := range keys {
			if v, ok := call.Credentials[k]; v != "" || ok && mayBeEmpty(k) {
				if creds == nil {
					creds = make(map[string]string, len(keys))
				}
				creds[k] = v
			} else {
				missing = append(missing, k)
			}
		}
	}
	if len(missing) == 0 || e.Credentials == nil || call.UserID == 0 {
		return creds, nil, nil
	}
	stored, err := e.Credentials.Resolve(ctx, call.UserID, missing)
	if err != nil {
		return nil, nil, err
	}
	fromPayload := creds != nil
	if !fromPayload {
		// All from the store (the usual call): its map, of the keys asked
		// for, is the call's; no copy.
		creds = stored
	}
	given := 0
	for _, k := range missing {
		v, ok := stored[k]
		if v == "" && !(ok && mayBeEmpty(k)) {
			delete(creds, k) // an empty value is no credential
			continue
		}
		if fromPayload {
			creds[k] = v
		}
		given++
	}
	if given == len(missing) {
		return creds, missing, nil // the store gave them all (the usual call): the keys asked for, no copy
	}
	fromStore = make([]string, 0, given)
	for _, k := range missing {
		if _, ok := creds[k]; ok {
			fromStore = append(fromStore, k)
		}
	}
	return creds, fromStore, nil
}

// storedKeys lists the credential keys a call of a plugin reading cfg
// would take from the store: those it reads (required_credentials, its
// auth config's, an MCP server's) that the payload does not give, when
// there is a store and a user to ask it for; and what the engine holds
// like them: the user's connection ("connection:<provider>"), an MCP
// plugin's registered server ("mcp_server:<id>").
func (e *Executor) storedKeys(call Call, cfg plugins.AuthConfig) []string {
	var stored []string
	if provider := cfg.ConnectionProvider(); provider != "" && call.UserID != 0 {
		// A user's connection is held by the engine like a stored
		// credential: an inline plugin naming a provider is bound too.
		stored = append(stored, "connection:"+provider)
	}
	if call.Plugin.ExecType() == plugins.TypeMCP {
		// So is a registered MCP server, the administrator's (its URL,
		// static headers and auth), whatever its auth config reads: an
		// inline MCP plugin is the catalog row of its name, so that it
		// can neither call another of the server's tools under a row's
		// name nor shed the perms of the row calling that tool.
		stored = append(stored, "mcp_server:"+call.Plugin.Execution.MCPID)
	}
	if e.Credentials == nil || call.UserID == 0 {
		return stored
	}
	_, keys := credentialKeys(call.Plugin)
	for _, k := range append(keys, cfg.CredentialKeys()...) {
		if v, ok := call.Credentials[k]; (v == "" && !(ok && cfg.MayBeEmpty(k))) && !slices.Contains(stored, k) {
			stored = append(stored, k)
		}
	}
	return stored
}

// connectionUsable refuses a call of a plugin using a connection that
// cannot have one: no user, no Connections, another type than http.
func (e *Executor) connectionUsable(call Call, p *plugins.Plugin, provider string) *RefusedError {
	switch {
	case p.ExecType() != plugins.TypeHTTP:
		return refuse(CodeInvalidPlugin, "the tool %s: auth_config.oauth2 grant authorization_code is for http plugins only", p.Name)
	case e.Connections == nil:
		return refuse(CodeAuthError, "the tool %s uses a connection to %s, and this engine has no connections configured", p.Name, provider)
	case call.UserID == 0:
		return connectionRequired(&connections.RequiredError{Provider: provider, Scopes: p.AuthConfig.OAuth2.Scopes,
			Missing: p.AuthConfig.OAuth2.Scopes, Reason: "the call names no user, and connections are per user"})
	}
	return nil
}

// connectionRequired is the refusal of a call whose user must connect.
func connectionRequired(re *connections.RequiredError) *RefusedError {
	return &RefusedError{ToolError{Code: CodeConnectionRequired, Message: re.Error(), Details: map[string]any{
		"provider": re.Provider, "scopes": nonNilStrings(re.Scopes), "missing_scopes": nonNilStrings(re.Missing)}}}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// bind applies the binding rule (auth.Catalog.Bind) to an inline plugin
// whose call would take the stored keys from the store: the catalog
// plugin the call then is, or a refusal: for an inline copy differing
// from a row of its name that call may not use, the access step's.
func (e *Executor) bind(ctx context.Context, call *Call, p *plugins.Plugin, stored []string) (*plugins.Plugin, *RefusedError) {
	if e.Catalog == nil {
		return nil, refuse(CodeCredentialNotBound, "the tool %s is not in the catalog, and no catalog is configured to bind stored credentials to: pass the credentials in the payload", p.Name)
	}
	row, err := e.Catalog.Bind(ctx, p, stored)
	var unbound *auth.UnboundCredentialError
	switch {
	case err == nil:
		return row, nil
	case errors.As(err, &unbound):
		if unbound.Field != "" {
			// The refusal names the first field p differs in from the row
			// of its name: of a row the caller may not use, an oracle of
			// its execution, fixed params, credential keys and parameters,
			// field by field. Who may use it speaks first, judging p as
			// that row (allowed).
			if denied := e.allowed(ctx, call, p); denied != nil {
				return nil, denied
			}
		}
		return nil, &RefusedError{ToolError{Code: CodeCredentialNotBound, Message: err.Error(),
			Details: map[string]any{"key": unbound.Key, "field": unbound.Field}}}
	}
	return nil, refuse(CodeAuthError, "the catalog could not be read to check the use of stored credentials: %v", err)
}

// copiedRow returns the enabled catalog plugin p, an inline plugin taking
// nothing from the store, is a copy of (the binding rule's equality),
// else nil: a catalog that cannot be read leaves p its caller's, sent as
// untrusted.
func (e *Executor) copiedRow(ctx context.Context, p *plugins.Plugin) *plugins.Plugin {
	if e.Catalog == nil {
		return nil
	}
	row, err := e.Catalog.Copy(ctx, p)
	if err != nil {
		return nil
	}
	return row
}

// identifiers returns the credential keys of a call of a plugin reading
// cfg that are read only as identifiers: a payload credential as cfg reads
// it (it is the caller's own), a stored one as the enabled catalog does
// (auth.Catalog.Identifiers), so that nothing a caller sends makes the
// masking of a stored credential looser.
func (e *Executor) identifiers(ctx context.Context, cfg plugins.AuthConfig, stored []string) []string {
	ids := cfg.IdentifierKeys()
	if len(stored) == 0 || e.Catalog == nil {
		return ids
	}
	ids = slices.DeleteFunc(ids, func(k string) bool { return slices.Contains(stored, k) })
	fromCatalog, err := e.Catalog.Identifiers(ctx, stored)
	if err != nil {
		// Unread, every stored credential is a secret: masked the more.
		e.logger().WarnContext(ctx, "masking classes: the catalog cannot be read; stored credentials are treated as secrets", "err", err)
		return ids
	}
	return append(ids, fromCatalog...)
}

// credentialKeys returns the keys the plugin requires (Plugin.Credentials)
// and those worth resolving: the required plus those its auth config reads
// (required_credentials may list fewer).
func credentialKeys(p *plugins.Plugin) (required, all []string) {
	if p.RequiredCredentials == nil {
		fromAuth := p.AuthConfig.CredentialKeys()
		return fromAuth, fromAuth
	}
	var buf [4]string // never returned: kept on the stack
	fromAuth := p.AuthConfig.CredentialKeysIn(buf[:])
	if !slices.ContainsFunc(fromAuth, func(k string) bool { return !slices.Contains(p.RequiredCredentials, k) }) {
		// Required lists every key the auth config reads (the usual
		// plugin): the plugin's own list, clipped so that no append
		// writes into it.
		all = slices.Clip(p.RequiredCredentials)
		return all, all
	}
	all = slices.Clone(p.RequiredCredentials)
	for _, k := range fromAuth {
		if !slices.Contains(all, k) {
			all = append(all, k)
		}
	}
	return p.RequiredCredentials, all
}

// MissingCredentials lists the keys of required that creds lacks (an empty
// value counts as missing), in the order of required.
func MissingCredentials(required []string, creds map[string]string) []string {
	return missingCredentials(required, creds, func(string) bool { return false })
}

// missingCredentials is MissingCredentials where an empty value of a key
// mayBeEmpty accepts (a basic-auth password) is a credential.
func missingCredentials(required []string, creds map[string]string, mayBeEmpty func(string) bool) []string {
	var missing []string
	for _, k := range required {
		if v, ok := creds[k]; v == "" && !(ok && mayBeEmpty(k)) {
			missing = append(missing, k)
		}
	}
	return missing
}

func (e *Executor) timeout(p *plugins.Plugin) time.Duration {
	d := DefaultTimeout
	if ms := p.Execution.TimeoutMS; ms > 0 {
		d = time.Duration(ms) * time.Millisecond
	}
	return min(d, cmp.Or(e.MaxTimeout, DefaultMaxTimeout))
}

// masker masks every secret credential value of the call and every
// secret derived from them: the one masker (auth.MaskerFor) of the call's
// output, error, record and log line.
func (e *Executor) masker(prep *Prepared) *auth.Masker {
	if prep == nil {
		return nil
	}
	return auth.MaskerFor(prep.ids, prep.Credentials, prep.derived()...)
}

// complete fills res from what the invoker returned.
func (e *Executor) complete(res *Result, prep *Prepared, resp *Response, err error) {
	m := e.masker(prep)
	if resp != nil {
		res.HTTPStatus = resp.StatusCode
		res.Attempts = resp.Attempts
	}
	if prep.sent != nil {
		res.Request = prep.shown(prep.sent)
	}
	if resp != nil && resp.Relay != nil {
		var model json.RawMessage
		res.Relayed, model = resp.Relay.Mask(m)
		resp = &Response{StatusCode: resp.StatusCode, ContentType: "application/json", Body: model, Attempts: resp.Attempts}
	}
	switch {
	case err != nil:
		te := classify(err)
		if te.Details == nil && resp != nil && resp.StatusCode != 0 {
			te.Details = excerpt(resp, m)
		}
		res.Error = maskError(te, m)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		// Masked like every message, though the engine wrote it: a secret
		// such as "00 B" would otherwise show in "HTTP 400 Bad Request".
		res.Error = maskError(&ToolError{
			Code:    CodeHTTPError,
			Message: fmt.Sprintf("the API answered HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)),
			Details: excerpt(resp, m),
		}, m)
	default:
		res.OK = true
		out := prep.Plugin.Execution.Response
		var sel string
		budget := DefaultOutputBytes
		if out != nil {
			sel = out.Select
			budget = cmp.Or(out.MaxBytes, DefaultOutputBytes)
		}
		if prep.Relay {
			sel, budget = "", int(prep.MaxResponseBytes) // the result whole, as read
		}
		if prep.untrusted {
			// A per-user token's own plugin does not raise what the model
			// reads past the engine's default: its max_bytes up to the
			// read cap made each of a run's 32 calls a turn 10 MiB of the
			// model's request, held in memory for every later turn.
			budget = min(budget, DefaultOutputBytes)
		}
		res.Output = shape(resp, sel, budget, m)
	}
}

func (e *Executor) logger() *slog.Logger { return cmp.Or(e.Logger, slog.Default()) }

// finish records, counts and logs the call.
func (e *Executor) finish(ctx context.Context, call Call, confirmation, questions string, res *Result, refused bool, d time.Duration) {
	status, outcome := StatusOK, "ok"
	var code, msg string
	if res.Error != nil {
		status, outcome, code, msg = StatusError, res.Error.Code, res.Error.Code, res.Error.Message
		if refused {
			status = StatusRefused
		}
	}
	if e.Recorder != nil {
		e.Recorder.Record(Record{
			ID:           res.ExecutionID,
			RunID:        call.RunID,
			PluginName:   call.Plugin.Name,
			UserID:       call.UserID,
			Status:       status,
			HTTPStatus:   res.HTTPStatus,
			LatencyMS:    res.LatencyMS,
			Attempts:     res.Attempts,
			ErrorClass:   code,
			ErrorMessage: truncateUTF8(msg, maxRecordMessage),
			Confirmation: confirmation,
			Questions:    questions,
			CreatedAt:    time.Now().UTC(),
			TraceID:      tracing.TraceID(ctx),
		})
	}
	e.Metrics.observe(call.Plugin, outcome, d)
	log := e.logger()
	level := slog.LevelDebug
	if res.Error != nil {
		level = slog.LevelInfo
	}
	if !log.Enabled(ctx, level) {
		return
	}
	log.LogAttrs(ctx, level, "tool call",
		slog.String("plugin", call.Plugin.Name),
		slog.Int64("user", call.UserID),
		slog.String("run", call.RunID),
		slog.String("execution_id", res.ExecutionID),
		slog.String("status", status),
		slog.String("code", code),
		slog.Int("http_status", res.HTTPStatus),
		slog.Int64("latency_ms", res.LatencyMS),
		slog.Int("attempts", res.Attempts),
		slog.String("error", msg), // masked already
	)
}
