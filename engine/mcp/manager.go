// Package mcp is the engine's MCP client: it calls the tools of the MCP
// servers registered in sys_ai_mcp_server, over streamable HTTP, SSE or a
// stdio command, through github.com/modelcontextprotocol/go-sdk.
//
// A [Manager] keeps one session per (server, credential set): a server's
// auth_config is filled from the calling user's credentials, so users with
// different credentials never share a session, while calls with the same
// ones reuse it. Sessions are bounded ([Manager.MaxSessions]) and closed
// after [Manager.IdleTimeout] without use; a session found broken is
// reopened once. Tool lists are cached per server for [Manager.ToolsTTL]
// and refreshed on demand.
//
// HTTP transports send through the engine's egress-guarded client, so a
// server URL obeys the egress policy like any plugin's base_url; static
// headers and the auth config are applied to every request that goes to the
// server's own origin, never to another (a redirect).
//
// [Invoker] performs execution.type "mcp" for the executor.
package mcp

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine"
	"log/slog"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/mcpimport"
	"github.com/blindexec/blindexec/store"
)

// Defaults of the Manager's zero settings.
const (
	DefaultToolsTTL       = 5 * time.Minute
	DefaultMaxSessions    = 64
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultConnectTimeout = 15 * time.Second
)

// Servers is where the Manager finds registered servers and keeps their
// tool lists: the store.
type Servers interface {
	GetMCPServer(ctx context.Context, ref string) (*store.MCPServer, error)
	UpdateMCPToolsCache(ctx context.Context, id string, tools store.JSON, at time.Time) error
}

var (
	// ErrServerNotFound: no server is registered under that id or name.
	ErrServerNotFound = errors.New("MCP server not found")
	// ErrServerDisabled: the server's status is disabled.
	ErrServerDisabled = errors.New("MCP server disabled")
)

// ToolNotFoundError is a tool the server does not list.
type ToolNotFoundError struct{ Server, Tool string }

func (e *ToolNotFoundError) Error() string {
	return fmt.Sprintf("MCP server %s has no tool %q", e.Server, e.Tool)
}

// UpstreamError is a server that could not be reached or broke the
// protocol (a JSON-RPC error answer included). Err is the cause; it may
// quote the server's URL and message but never a credential value the
// caller masks (see Call.OnSecrets).
type UpstreamError struct {
	Server string // name
	Op     string // "connect", "tools/list", "tools/call"
	Err    error
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("MCP server %s: %s: %v", e.Server, e.Op, e.Err)
}

func (e *UpstreamError) Unwrap() error { return e.Err }

// Manager is the engine's MCP client. Set its exported fields before the
// first call; it is safe for concurrent use afterwards.
type Manager struct {
	// ToolsTTL bounds the age of a cached tool list (DefaultToolsTTL).
	ToolsTTL time.Duration
	// MaxSessions bounds the open sessions (DefaultMaxSessions). Past it,
	// the least recently used idle session is closed; sessions with calls
	// in flight are never closed, so the bound is exceeded while all are
	// busy.
	MaxSessions int
	// IdleTimeout closes a session unused for that long (DefaultIdleTimeout).
	IdleTimeout time.Duration
	// ConnectTimeout bounds opening a session (DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// MaxMessageBytes bounds what is read of one message from an HTTP
	// server: a JSON answer, an event of a stream
	// (engine.DefaultMaxResponseBytes when 0). The MCP SDK reads a JSON
	// answer whole: without it, a server's endless answer filled memory
	// until the call's timeout.
	MaxMessageBytes int64
	// MaxToolsBytes bounds a tools/list answer whole, its pages together,
	// as its tools encode (plugins.DefaultImportMaxBytes when 0;
	// BLINDEXEC_IMPORT_MAX_MB): MaxMessageBytes bounds a page, not the
	// pages a server's next cursors ask for, and a list is held, cached
	// and imported whole. Past it the list fails (mcpimport.TooLargeError).
	MaxToolsBytes int
	Logger        *slog.Logger // nil: slog.Default()
	// Changes, when set, keeps server configurations while the MCP
	// servers' change counter stands still, instead of for ToolsTTL: a
	// server changed or disabled anywhere (another replica, SQL) is re-read
	// after one poll, and its sessions and tool lists are dropped.
	Changes interface{ Current() store.Versions }
	// Identifiers, when set, is the catalog's word on which credential
	// keys are identifiers (auth.Catalog.Identifiers): the masker of the
	// manager's messages (errors, log lines) treats a key as one only when
	// both its server's auth config and the catalog do, so that a server
	// reading a stored key as an identifier cannot show a value the
	// catalog reads as a secret.
	Identifiers func(ctx context.Context, keys []string) ([]string, error)

	servers Servers
	client  *http.Client
	auth    *auth.Authenticator
	salt    []byte // keys the credential hashes of session keys

	notices  notices
	owned    atomic.Uint64 // the last sessionKey.own given
	mu       sync.Mutex
	sessions map[sessionKey]*session
	configs  map[string]*cached[*serverConfig] // by id, and by the name it was asked by
	// Tool lists by server and credential set: a server may list other
	// tools to another user's credentials. toolsBytes is what they hold,
	// as encoded: at most MaxToolsBytes in all, the oldest dropped first,
	// so that a server listing near the limit to each of many users'
	// credentials is not held once a user.
	tools      map[sessionKey]*cached[[]*sdk.Tool]
	toolsBytes int
	closed     bool
	stop       chan struct{}
}

type cached[T any] struct {
	v       T
	at      time.Time
	version int64 // of the MCP servers' change counter when read
	size    int   // a tool list's bytes, as encoded
}

// NewManager returns a Manager finding servers in servers and sending
// through client, which must be the egress-guarded client
// (egress.NewClient); oauth2 token requests of a server's auth config use
// it too. Close it when done.
func NewManager(servers Servers, client *http.Client) *Manager {
	salt := make([]byte, 32)
	rand.Read(salt)
	m := &Manager{
		servers:  servers,
		client:   client,
		auth:     auth.NewAuthenticator(client),
		salt:     salt,
		sessions: make(map[sessionKey]*session),
		configs:  make(map[string]*cached[*serverConfig]),
		tools:    make(map[sessionKey]*cached[[]*sdk.Tool]),
		stop:     make(chan struct{}),
	}
	m.notices.unattributed.N, m.notices.unattributed.Period = unattributedLogsPerMinute, time.Minute
	go m.janitor()
	return m
}

// Close closes every session. Calls after Close fail.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	all := slices.Collect(maps.Values(m.sessions))
	clear(m.sessions)
	m.mu.Unlock()
	for _, s := range all {
		s.close()
	}
	return nil
}

// Forget drops what the Manager holds about server ref (id or name): its
// configuration, its tool list and its sessions. Call it after the
// server's row changes or is deleted.
func (m *Manager) Forget(ref string) {
	m.mu.Lock()
	var ids []string
	if c := m.configs[ref]; c != nil {
		ids = append(ids, c.v.id, c.v.name)
	}
	ids = append(ids, ref)
	var drop []*session
	for _, id := range ids {
		delete(m.configs, id)
		for k := range m.tools {
			if k.server == id {
				m.dropTools(k)
			}
		}
		for k, s := range m.sessions {
			if k.server == id {
				delete(m.sessions, k)
				drop = append(drop, s)
			}
		}
	}
	m.mu.Unlock()
	for _, s := range drop {
		s.close()
	}
}

func (m *Manager) logger() *slog.Logger { return cmp.Or(m.Logger, slog.Default()) }

// serverConfig is a registered server, decoded.
type serverConfig struct {
	id, name, transport, url string
	argv                     []string
	headers                  map[string]string
	auth                     plugins.AuthConfig
	disabled                 bool
	trusted                  bool
	// credentialsURL is the URL whose origin the users' stored
	// credentials were given for (store.MCPServer.CredentialsURL).
	credentialsURL string
	// credentialsTokenURL is the oauth2 token URL whose origin they were
	// given for (store.MCPServer.CredentialsTokenURL).
	credentialsTokenURL string
	// sends is where the server's tools send its keys (auth.ServerSendsOf
	// the row): what the rule of where keys go judges (Invoker.Server).
	sends auth.ServerSends
	// urlSecrets are the credentials its url carries in its query
	// (redact.Credentials): masked in what is said of its calls.
	urlSecrets []string
	// digest is a hex sha256 of where calls go and what they carry — the
	// transport, URL or command, headers and auth config — which a
	// person's approval of a call binds (Invoker.Server), and the
	// decision of where its stored keys go (Invoker.Server).
	digest string
}

// DestinationChangedError refuses a call whose server row changed since
// the decision bound it (Call.Destination): nothing was sent.
type DestinationChangedError struct{ Server string }

func (e *DestinationChangedError) Error() string {
	return fmt.Sprintf("MCP server %s changed (its URL, headers or auth) since the call was decided", e.Server)
}

// Server returns the id and name of server ref (id or name), or
// ErrServerNotFound.
func (m *Manager) Server(ctx context.Context, ref string) (id, name string, err error) {
	c, err := m.config(ctx, ref)
	if err != nil {
		return "", "", err
	}
	return c.id, c.name, nil
}

// Trusted reports whether an administrator vouches for server ref, so
// that its tools' annotations may lower their class
// (mcpimport.ConsequentialHint).
func (m *Manager) Trusted(ctx context.Context, ref string) (bool, error) {
	c, err := m.config(ctx, ref)
	if err != nil {
		return false, err
	}
	return c.trusted, nil
}

// Masker returns the masker of a call to server ref made with creds (see
// auth.MaskerFor): the server's auth config tells secrets from
// identifiers.
func (m *Manager) Masker(ctx context.Context, ref string, creds map[string]string, derived ...string) *auth.Masker {
	c, err := m.config(ctx, ref)
	if err != nil {
		return auth.MaskerFor(nil, creds, derived...) // every credential a secret
	}
	return m.maskerFor(ctx, c, creds, derived...)
}

// maskerFor is the masker of messages about a call to srv with creds: an
// identifier is a key the server's auth config and the catalog (when
// Identifiers is set) both read as one; the credentials of srv's url's
// query are secrets too (review80).
func (m *Manager) maskerFor(ctx context.Context, srv *serverConfig, creds map[string]string, derived ...string) *auth.Masker {
	ids := srv.auth.IdentifierKeys()
	if len(ids) > 0 && m.Identifiers != nil {
		var err error
		if ids, err = m.Identifiers(ctx, ids); err != nil {
			ids = nil // unread, every credential is a secret
		}
	}
	if len(srv.urlSecrets) > 0 {
		derived = slices.Concat(derived, srv.urlSecrets)
	}
	return auth.MaskerFor(ids, creds, derived...)
}

// HostMoved says when the server ref, over HTTP, is no longer at the
// origin its users' stored credentials were given for (its
// credentials_url), or its oauth2 token URL, where the client id and
// secret go, not at theirs (credentials_token_url), however it was
// changed since: those are sent to no other (*engine.HostMovedError). A
// stdio server goes to no host.
// A server that cannot be read is the error: nothing says where the
// call would go, and a read a moment later may see the moved row.
func (m *Manager) HostMoved(ctx context.Context, ref string) error {
	c, err := m.config(ctx, ref)
	if err != nil {
		return err
	}
	return c.moved()
}

// moved is HostMoved of the server c.
func (c *serverConfig) moved() error {
	if c.transport == store.TransportStdio {
		return nil
	}
	if given, now := auth.Origin(c.credentialsURL), auth.Origin(c.url); given == "" || given != now {
		return &engine.HostMovedError{Server: c.name, Field: "url", Given: given, Now: now}
	}
	if o := c.auth.OAuth2; c.auth.Type == plugins.AuthOAuth2 && o != nil && o.TokenURL != "" && o.EffectiveGrant() == plugins.GrantClientCredentials {
		if given, now := auth.Origin(c.credentialsTokenURL), auth.Origin(o.TokenURL); given == "" || given != now {
			return &engine.HostMovedError{Server: c.name, Field: "auth_config.oauth2.token_url", Given: given, Now: now}
		}
	}
	return nil
}

// Credentials are the credentials the auth config of server ref reads
// for a listing of its tools: those given, then the user's stored ones,
// which go only where they were given for (HostMoved). The resolver of
// every listing with a user's keys: the API's tools route and import, and
// `blindexec import mcp --user`.
func (m *Manager) Credentials(ctx context.Context, ref string, user int64, given map[string]string, stored engine.CredentialResolver) (map[string]string, error) {
	keys, err := m.CredentialKeys(ctx, ref)
	if err != nil {
		return nil, err
	}
	creds := make(map[string]string, len(keys))
	var missing []string
	for _, k := range keys {
		if v := given[k]; v != "" {
			creds[k] = v
		} else {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 || user == 0 || stored == nil {
		return creds, nil
	}
	if err := m.HostMoved(ctx, ref); err != nil {
		return nil, err
	}
	values, err := stored.Resolve(ctx, user, missing)
	if err != nil {
		return nil, fmt.Errorf("the stored credentials of user %d: %w", user, err)
	}
	maps.Copy(creds, values)
	return creds, nil
}

// CredentialKeys lists the credential keys the server's auth config reads.
func (m *Manager) CredentialKeys(ctx context.Context, ref string) ([]string, error) {
	c, err := m.config(ctx, ref)
	if err != nil {
		return nil, err
	}
	return c.auth.CredentialKeys(), nil
}

func (m *Manager) config(ctx context.Context, ref string) (*serverConfig, error) {
	ttl := cmp.Or(m.ToolsTTL, DefaultToolsTTL)
	var version int64
	if m.Changes != nil {
		version = m.Changes.Current().MCPServers
	}
	m.mu.Lock()
	c := m.configs[ref]
	fresh := c != nil && c.version == version && (m.Changes != nil || time.Since(c.at) < ttl)
	m.mu.Unlock()
	if fresh {
		return c.v, nil
	}
	if c != nil && m.Changes != nil {
		m.Forget(ref) // the server may have moved or been disabled
	}
	row, err := m.servers.GetMCPServer(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		// A reference may be a URL the caller took for one (the CLI's
		// import): quoted without its userinfo.
		return nil, fmt.Errorf("%w: %q", ErrServerNotFound, redact.URL(ref))
	}
	if err != nil {
		return nil, err
	}
	conf, err := decodeServer(row)
	if err != nil {
		return nil, err
	}
	entry := &cached[*serverConfig]{v: conf, at: time.Now(), version: version}
	m.mu.Lock()
	// Under its id, and under ref (which found it: no server had that id).
	// Never under its name unasked: a server's name may be another's id,
	// and the id wins (review78: reading the one sent the other's calls,
	// and its users' keys, to it).
	m.configs[conf.id], m.configs[ref] = entry, entry
	m.mu.Unlock()
	return conf, nil
}

func decodeServer(row *store.MCPServer) (*serverConfig, error) {
	c := &serverConfig{id: row.ID, name: row.Name, transport: row.Transport, url: row.URL,
		disabled: row.Status == store.StatusDisabled, trusted: row.Trusted, sends: auth.ServerSendsOf(row),
		urlSecrets: redact.Credentials(row.URL)}
	if row.CredentialsURL != nil {
		c.credentialsURL = *row.CredentialsURL
	}
	if row.CredentialsTokenURL != nil {
		c.credentialsTokenURL = *row.CredentialsTokenURL
	}
	var err error
	if c.argv, err = row.Argv(); err != nil {
		return nil, err
	}
	if c.headers, err = row.HeaderMap(); err != nil {
		return nil, err
	}
	if c.auth, err = catalog.MCPServerAuth(row); err != nil {
		return nil, err
	}
	b, err := json.Marshal(struct {
		Transport string             `json:"transport"`
		URL       string             `json:"url"`
		Argv      []string           `json:"argv"`
		Headers   map[string]string  `json:"headers"`
		Auth      plugins.AuthConfig `json:"auth"`
	}{c.transport, c.url, c.argv, c.headers, c.auth})
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", c.name, err)
	}
	sum := sha256.Sum256(b)
	c.digest = hex.EncodeToString(sum[:])
	return c, nil
}

// Call is one tools/call.
type Call struct {
	Server    string         // id or name
	Tool      string         // the tool's name on the server
	Arguments map[string]any // flat; nil sends {}
	// Credentials fill the server's auth config.
	Credentials map[string]string
	// Headers are the plugin's static execution.headers: set on this
	// call's HTTP requests to the server (over the server's own headers,
	// under its auth). A stdio server has no headers to set.
	Headers map[string]string
	// OnSecrets, if set, receives the values derived from the credentials
	// (an oauth2 access token, a basic-auth header) that went on the wire,
	// so that the caller can mask them like the credentials themselves.
	OnSecrets func(...string)
	// Traceparent, when set, goes with the call: in params._meta (the
	// MCP convention, the only way over stdio) and, over HTTP, as the
	// traceparent header of its requests.
	Traceparent string
	// Destination, when set, is the server's digest a person approved,
	// or the rule of where stored keys go judged
	// (engine.Prepared.Destination): a server changed since is not
	// called (*DestinationChangedError).
	Destination string
	// OnProgress, when set, asks the server for progress (a token of the
	// call's own) and receives it; OnLog receives the server's log
	// messages attributable to the call (see notices).
	OnProgress func(*sdk.ProgressNotificationParams)
	OnLog      func(*logMessage)
	// OnAsk, when set, puts the server's questions during the call
	// (elicitation) to the call's person (questions.go); unset, they are
	// refused at once.
	OnAsk func(engine.Question) (engine.Answer, error)
	// Settle holds the result until the call's notices have arrived
	// (notices.settle): a client listens to them.
	Settle bool
}

// CallTool performs call. A tool-level failure is a result with IsError
// set, not an error; errors are ErrServerNotFound, ErrServerDisabled,
// *auth.MissingCredentialsError, *UpstreamError or the context's.
func (m *Manager) CallTool(ctx context.Context, call Call) (*sdk.CallToolResult, error) {
	srv, err := m.config(ctx, call.Server)
	if err != nil {
		return nil, err
	}
	if call.Destination != "" && call.Destination != srv.digest {
		return nil, &DestinationChangedError{Server: srv.name}
	}
	args := call.Arguments
	if args == nil {
		args = map[string]any{}
	}
	var res *sdk.CallToolResult
	derived, err := m.withSession(ctx, srv, call.Credentials, call.OnSecrets, false, func(ctx context.Context, cs *sdk.ClientSession) error {
		var err error
		params := &sdk.CallToolParams{Name: call.Tool, Arguments: args}
		headers := call.Headers
		if call.Traceparent != "" {
			params.Meta = sdk.Meta{"traceparent": call.Traceparent}
			headers = maps.Clone(headers)
			if headers == nil {
				headers = map[string]string{}
			}
			headers["traceparent"] = call.Traceparent
		}
		var last atomic.Int64 // when the call's last notice came
		onProgress, onLog := call.OnProgress, call.OnLog
		if onProgress != nil {
			onProgress = func(p *sdk.ProgressNotificationParams) { last.Store(time.Now().UnixNano()); call.OnProgress(p) }
		}
		if onLog != nil {
			onLog = func(p *logMessage) { last.Store(time.Now().UnixNano()); call.OnLog(p) }
		}
		if onProgress != nil {
			tok, forget := m.notices.progressToken(onProgress)
			defer forget()
			params.Meta = maps.Clone(params.Meta)
			if params.Meta == nil {
				params.Meta = sdk.Meta{}
			}
			params.Meta["progressToken"] = tok
		}
		var ask askFunc
		if call.OnAsk != nil {
			ask = asker(srv, call.OnAsk)
			ctx = context.WithValue(ctx, askKey{}, ask)
		}
		defer m.notices.listen(cs, onLog, ask)()
		res, err = cs.CallTool(withCallHeaders(ctx, headers), params)
		if call.Settle {
			settle(&last)
		}
		return err
	})
	if err != nil {
		return nil, m.upstream(ctx, srv, "tools/call", call.Tool, call.Credentials, derived, err)
	}
	return res, nil
}

// maxToolPages bounds the pages of one tools/list: the bound on the
// list's bytes does not stop a server handing out a next cursor with
// empty pages, which was read until the request's deadline. Real
// servers list tens of tools a page.
const maxToolPages = 1000

// Tools returns the tools of server ref as creds see them: the list cached
// for that credential set while younger than ToolsTTL unless refresh is
// set, else a fresh tools/list made with creds, which is cached and stored
// with the server's row (the last list fetched, for display).
func (m *Manager) Tools(ctx context.Context, ref string, creds map[string]string, refresh bool) ([]*sdk.Tool, error) {
	return m.listed(ctx, ref, "", creds, refresh)
}

// listed is Tools of the server row whose digest is destination (any row
// when ""): a row changed since is a *DestinationChangedError, nothing
// sent (Tool).
func (m *Manager) listed(ctx context.Context, ref, destination string, creds map[string]string, refresh bool) ([]*sdk.Tool, error) {
	srv, err := m.config(ctx, ref)
	if err != nil {
		return nil, err
	}
	if destination != "" && destination != srv.digest {
		return nil, &DestinationChangedError{Server: srv.name}
	}
	ttl := cmp.Or(m.ToolsTTL, DefaultToolsTTL)
	key := sessionKey{server: srv.id, creds: m.credHash(srv.auth.CredentialKeys(), creds)}
	m.mu.Lock()
	c := m.tools[key]
	m.mu.Unlock()
	if c != nil && !refresh && time.Since(c.at) < ttl {
		return c.v, nil
	}
	var (
		tools   []*sdk.Tool
		encoded []byte // the list as the cache stores it, counted as it comes
	)
	limit := cmp.Or(m.MaxToolsBytes, plugins.DefaultImportMaxBytes)
	// Over SSE the answers come on the session's one event stream, and a
	// listing is charged all of it (readBudget): on a session of its own,
	// so that what the shared session's other calls read meanwhile is
	// never charged to it (before, another user's calls reading large
	// answers during a listing made it fail).
	own := srv.transport == store.TransportSSE
	// derived: the sessions' own secrets (an oauth2 access token)
	derived, err := m.withSession(ctx, srv, creds, nil, own, func(ctx context.Context, cs *sdk.ClientSession) error {
		// The answers as read, twice the tools' own bound and one
		// answer's: a page's envelope and ignored fields count, and a
		// listing within the bound, or one answer over it (which the
		// tools' count refuses by name), is never refused by them.
		ctx, end := withReadBudget(ctx, 2*int64(limit)+cmp.Or(m.MaxMessageBytes, engine.DefaultMaxResponseBytes))
		defer end()
		tools, encoded = tools[:0], append(encoded[:0], '[')
		params := &sdk.ListToolsParams{}
		for page := 1; ; page++ {
			if page > maxToolPages {
				return fmt.Errorf("more than %d pages (%d tools): the server's listing does not end", maxToolPages, len(tools))
			}
			res, err := cs.ListTools(ctx, params)
			if err != nil {
				return overBudget(ctx, err)
			}
			for _, t := range res.Tools {
				tools = append(tools, t)
				if len(tools) > 1 {
					encoded = append(encoded, ',')
				}
				b, err := json.Marshal(t)
				if err != nil {
					return err
				}
				if encoded = append(encoded, b...); len(encoded) > limit {
					return &mcpimport.TooLargeError{Max: limit, Tool: t.Name, Tools: len(tools), Listed: true}
				}
			}
			if res.NextCursor == "" {
				break
			}
			params.Cursor = res.NextCursor
		}
		encoded = append(encoded, ']')
		return nil
	})
	if err == nil {
		tools, encoded, err = maskedTools(m.maskerFor(ctx, srv, creds, derived...), tools, encoded)
	}
	if err != nil {
		return nil, m.upstream(ctx, srv, "tools/list", "", creds, derived, err)
	}
	now := time.Now()
	m.mu.Lock()
	m.keepTools(key, &cached[[]*sdk.Tool]{v: tools, at: now, size: len(encoded)}, limit)
	m.mu.Unlock()
	if err := m.servers.UpdateMCPToolsCache(ctx, srv.id, encoded, now); err != nil {
		m.logger().WarnContext(ctx, "MCP tools cache not stored", "mcp_id", srv.id, "err", err)
	}
	return tools, nil
}

// maskedTools are tools, encoded as encoded, with every credential of
// mask masked, as a call's result is: a listing made with a user's
// credentials goes into the catalog every user's model reads, the
// server's row and the answer of its tools route. Unchanged when they
// hold none; an error when masking leaves no list.
func maskedTools(mask *auth.Masker, tools []*sdk.Tool, encoded []byte) ([]*sdk.Tool, []byte, error) {
	masked := mask.Bytes(encoded)
	if bytes.Equal(masked, encoded) {
		return tools, encoded, nil
	}
	var out []*sdk.Tool
	if err := json.Unmarshal(masked, &out); err != nil {
		return nil, nil, errors.New("the server's tools list a credential that cannot be masked")
	}
	return out, masked, nil
}

// keepTools caches a tool list under key, dropping the oldest others
// while the lists hold more than limit bytes. m.mu is held.
func (m *Manager) keepTools(key sessionKey, c *cached[[]*sdk.Tool], limit int) {
	m.dropTools(key)
	m.tools[key] = c
	m.toolsBytes += c.size
	for m.toolsBytes > limit {
		var oldest *sessionKey
		for k, o := range m.tools {
			if k != key && (oldest == nil || o.at.Before(m.tools[*oldest].at)) {
				oldest = &k
			}
		}
		if oldest == nil {
			return // the list alone: within limit, as listed
		}
		m.dropTools(*oldest)
	}
}

// dropTools forgets the tool list cached under key. m.mu is held.
func (m *Manager) dropTools(key sessionKey) {
	if c := m.tools[key]; c != nil {
		m.toolsBytes -= c.size
		delete(m.tools, key)
	}
}

// Tool returns the tool called name on server ref, looking it up in the
// cached list and, when absent there, in a fresh one (a tool added since);
// a *ToolNotFoundError when the server does not list it. destination,
// when set, is the digest of the row where creds were judged to go
// (engine.Executor.Allowed): another row is not asked
// (*DestinationChangedError).
func (m *Manager) Tool(ctx context.Context, ref, name string, creds map[string]string, destination string) (*sdk.Tool, error) {
	for _, refresh := range []bool{false, true} {
		tools, err := m.listed(ctx, ref, destination, creds, refresh)
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(tools, func(t *sdk.Tool) bool { return t.Name == name }); i >= 0 {
			return tools[i], nil
		}
	}
	_, srvName, _ := m.Server(ctx, ref)
	return nil, &ToolNotFoundError{Server: srvName, Tool: name}
}

// upstream wraps a failure of op and logs it with the server and tool. The
// message, logged and returned (errors.Is and As still reach the cause),
// is masked with creds and the secrets derived from them (withSession): a
// credential mapped to the query string would otherwise appear in a
// quoted URL, and an upstream's refusal may quote the bearer it was sent.
func (m *Manager) upstream(ctx context.Context, srv *serverConfig, op, tool string, creds map[string]string, derived []string, err error) error {
	var missing *auth.MissingCredentialsError
	if !errors.As(err, &missing) && !errors.Is(err, ErrServerDisabled) && ctx.Err() == nil {
		err = &UpstreamError{Server: srv.name, Op: op, Err: err}
	}
	err = m.maskerFor(ctx, srv, creds, derived...).Error(err)
	m.logger().LogAttrs(ctx, slog.LevelError, "MCP call failed",
		slog.String("mcp_id", srv.id), slog.String("op", op), slog.String("tool", tool), slog.String("error", err.Error()))
	return err
}

// withSession runs f on a session for (srv, creds), reopening it once when
// it turns out broken (closed by the server, or its session forgotten
// there): in both cases the request never reached a live session, so
// repeating it cannot run a tool twice. own: on a session of its own,
// closed after f. secrets are the values the sessions' transports derived
// from creds and sent (an oauth2 access token), handshakes that failed
// included: given to onSecrets (if set) as soon as they are known, before
// f (the call's notices are masked with them) and after (a token fetched
// anew), and returned, for its failure's masking (upstream).
func (m *Manager) withSession(ctx context.Context, srv *serverConfig, creds map[string]string, onSecrets func(...string), own bool, f func(context.Context, *sdk.ClientSession) error) (secrets []string, err error) {
	ctx = valueless{ctx}
	if srv.disabled {
		return nil, fmt.Errorf("%w: %s", ErrServerDisabled, srv.name)
	}
	keys := srv.auth.CredentialKeys()
	if missing := engine.MissingCredentials(keys, creds); len(missing) > 0 {
		return nil, &auth.MissingCredentialsError{Keys: missing}
	}
	if err := auth.CheckSecretLengths(srv.auth.IdentifierKeys(), creds); err != nil {
		return nil, err
	}
	key := sessionKey{server: srv.id, creds: m.credHash(keys, creds)}
	if own {
		key.own = m.owned.Add(1)
	}
	sent := func(s *session) {
		if d := s.secrets(); len(d) > 0 {
			secrets = append(secrets, d...)
			if onSecrets != nil {
				onSecrets(d...)
			}
		}
	}
	for attempt := 1; ; attempt++ {
		s, err := m.acquire(ctx, key, srv, creds)
		if s != nil {
			sent(s)
		}
		if err != nil {
			return secrets, err
		}
		err = f(ctx, s.cs)
		sent(s)
		m.release(s)
		if attempt == 1 && (errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing)) {
			m.logger().DebugContext(ctx, "MCP session broken; reopening", "mcp_id", srv.id, "err", err)
			m.drop(s)
			continue
		}
		if own {
			m.drop(s)
		}
		return secrets, err
	}
}

// valueless keeps a context's deadline and cancellation but none of its
// values. When the engine itself serves MCP (package mcpserver), the
// incoming request's context carries the SDK's per-request state (its
// protocol version), which must not leak into an outgoing session.
type valueless struct{ context.Context }

func (v valueless) Value(key any) any {
	if key == (askKey{}) { // a call's own asker, set on it by CallTool
		return v.Context.Value(key)
	}
	return nil
}

// credHash identifies the credential set of a session without keeping the
// values: an HMAC under a per-process key.
func (m *Manager) credHash(keys []string, creds map[string]string) string {
	if len(keys) == 0 {
		return ""
	}
	h := hmac.New(sha256.New, m.salt)
	for _, k := range keys { // sorted by CredentialKeys
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(creds[k]), creds[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// connect opens a session. The handshake is bounded by ctx and
// ConnectTimeout; the session outlives ctx.
func (m *Manager) connect(ctx context.Context, srv *serverConfig, creds map[string]string, held *heldSchemas) (*sdk.ClientSession, *authTransport, error) {
	var (
		t  sdk.Transport
		at *authTransport
	)
	switch srv.transport {
	case store.TransportStreamableHTTP, store.TransportSSE:
		var err error
		limit := cmp.Or(m.MaxMessageBytes, engine.DefaultMaxResponseBytes)
		if at, err = newAuthTransport(m.client.Transport, m.auth, srv, creds, held, limit); err != nil {
			return nil, nil, err
		}
		hc := &http.Client{Transport: at, CheckRedirect: m.client.CheckRedirect}
		if srv.transport == store.TransportSSE {
			t = &sdk.SSEClientTransport{Endpoint: srv.url, HTTPClient: hc, MaxEventSize: int(limit)}
		} else {
			// The standalone stream stays open: a server's requests not tied
			// to a call (the TypeScript SDK's server.request from a tool's
			// handler) travel only there, and unheard they would hang the
			// call until its timeout. Close ends it with the session.
			t = &sdk.StreamableClientTransport{Endpoint: srv.url, HTTPClient: hc, MaxEventSize: int(limit)}
		}
	case store.TransportStdio:
		if len(srv.argv) == 0 {
			return nil, nil, fmt.Errorf("MCP server %s: stdio transport without a command", srv.name)
		}
		// Credentials are not passed to a stdio server: its command and
		// environment are the operator's.
		t = heldTransport{&sdk.CommandTransport{Command: exec.Command(srv.argv[0], srv.argv[1:]...)}, held}
	default:
		return nil, nil, fmt.Errorf("MCP server %s: unknown transport %q", srv.name, srv.transport)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "blindexec", Version: "1"}, &sdk.ClientOptions{
		Logger:                      m.logger(),
		Capabilities:                capabilities(),
		ElicitationHandler:          m.onElicit,
		ProgressNotificationHandler: m.onProgress,
		LoggingMessageHandler:       m.onLog, //lint:ignore SA1019 relayed while upstreams of 2025 send logs (issue 48)
	})
	client.AddReceivingMiddleware(refuseUnsupported)
	hctx, cancel := context.WithTimeout(ctx, cmp.Or(m.ConnectTimeout, DefaultConnectTimeout))
	defer cancel()
	cs, err := client.Connect(hctx, detached{t}, nil)
	if err == nil {
		m.logEverything(hctx, srv, cs)
	}
	return cs, at, err
}

// detached opens its transport on a context without the handshake's
// deadline and cancellation: the session outlives the call that opened it,
// and the SSE transport ties its event stream to that context.
type detached struct{ sdk.Transport }

func (d detached) Connect(ctx context.Context) (sdk.Connection, error) {
	return d.Transport.Connect(context.WithoutCancel(ctx))
}
