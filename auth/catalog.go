package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// The origin rule: a stored credential key K may be sent to origin O
// (scheme, host, port) only when an enabled catalog plugin with origin O
// reads K: through its base_url, its oauth2 token_url, or the URL of its
// MCP server. The catalog is the administrator's, so the rule holds
// inline plugins (those a runtime payload defines) to what the
// administrator allowed; an administrator's own inline plugins are exempt,
// as are credentials given in the payload (the caller's own). The
// executor enforces it (engine.Call.BoundToCatalog) through a Catalog.

// ErrCredentialNotBound is wrapped by the error refusing a stored
// credential to an origin no enabled catalog plugin sends it to.
var ErrCredentialNotBound = errors.New("a stored credential goes only to an origin an enabled catalog plugin sends it to (its base_url, oauth2 token_url or MCP server URL)")

// UnboundCredentialError refuses to send the stored credential Key to
// Origin. It names the key and the origin, never the value.
type UnboundCredentialError struct {
	Key, Origin string
}

func (e *UnboundCredentialError) Error() string {
	return fmt.Sprintf("stored credential %s may not be sent to %s: %v", e.Key, e.Origin, ErrCredentialNotBound)
}

func (e *UnboundCredentialError) Unwrap() error { return ErrCredentialNotBound }

// CatalogSource is the catalog a Catalog indexes; *store.Store implements
// it.
type CatalogSource interface {
	ListPlugins(ctx context.Context, f store.PluginFilter) ([]store.Plugin, error)
	ListMCPServers(ctx context.Context) ([]store.MCPServer, error)
}

// Catalog answers the questions the credential rules ask of the enabled
// catalog: where each credential key may go (the origin rule), and whether
// a key is only ever read as an identifier (so that a short value may be
// stored). It reads the catalog again when the plugins' or MCP servers'
// change counter moved, and, at most once a second, before refusing: a
// plugin just added elsewhere is honoured at once, one just disabled after
// one poll. It is safe for concurrent use.
type Catalog struct {
	src     CatalogSource
	changes Versions

	mu      sync.Mutex
	idx     *catalogIndex
	loaded  time.Time
	version [2]int64 // the plugins' and MCP servers' counters idx was read at
}

// catalogIndex is what the enabled catalog does with each credential key.
type catalogIndex struct {
	origins map[string][]string // key → the origins it is sent to
	secret  map[string]bool     // key → read as a secret somewhere (false: only as an identifier)
	servers map[string]mcpServer
}

type mcpServer struct {
	origin string // "" for a stdio server: nothing leaves the host
	auth   plugins.AuthConfig
}

// catalogRetry is the least time between two reads of the catalog made to
// check a refusal.
const catalogRetry = time.Second

// NewCatalog returns a Catalog over src following changes (a
// *store.Watcher).
func NewCatalog(src CatalogSource, changes Versions) *Catalog {
	return &Catalog{src: src, changes: changes}
}

// index returns the index, read afresh when the counters moved or, with
// recheck, when older than catalogRetry.
func (c *Catalog) index(ctx context.Context, recheck bool) (*catalogIndex, error) {
	v := c.changes.Current()
	version := [2]int64{v.Plugins, v.MCPServers}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idx != nil && c.version == version && (!recheck || time.Since(c.loaded) < catalogRetry) {
		return c.idx, nil
	}
	idx, err := readCatalog(ctx, c.src)
	if err != nil {
		return nil, err
	}
	c.idx, c.loaded, c.version = idx, time.Now(), version
	return idx, nil
}

func readCatalog(ctx context.Context, src CatalogSource) (*catalogIndex, error) {
	servers, err := src.ListMCPServers(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the catalog: %w", err)
	}
	idx := &catalogIndex{origins: map[string][]string{}, secret: map[string]bool{}, servers: map[string]mcpServer{}}
	for _, s := range servers {
		cfg, err := catalog.MCPServerAuth(&s)
		if err != nil || s.Status != store.StatusEnabled {
			continue // a server the engine cannot or may not call binds nothing
		}
		srv := mcpServer{auth: cfg}
		if s.Transport != store.TransportStdio {
			srv.origin = Origin(s.URL)
		}
		idx.servers[s.ID], idx.servers[s.Name] = srv, srv
	}
	rows, err := src.ListPlugins(ctx, store.PluginFilter{Status: store.StatusEnabled})
	if err != nil {
		return nil, fmt.Errorf("read the catalog: %w", err)
	}
	for i := range rows {
		p, err := catalog.PluginFromRow(&rows[i])
		if err != nil {
			continue // a row the engine cannot run binds nothing
		}
		for key, origins := range idx.destinations(p) {
			for _, o := range origins {
				if !slices.Contains(idx.origins[key], o) {
					idx.origins[key] = append(idx.origins[key], o)
				}
			}
		}
		cfg := idx.authOf(p)
		ids := cfg.IdentifierKeys()
		for _, k := range cfg.CredentialKeys() {
			idx.secret[k] = idx.secret[k] || !slices.Contains(ids, k)
		}
	}
	return idx, nil
}

// authOf is the auth config that reads p's credentials: its own, or its
// MCP server's.
func (idx *catalogIndex) authOf(p *plugins.Plugin) plugins.AuthConfig {
	if p.ExecType() == plugins.TypeMCP {
		return idx.servers[p.Execution.MCPID].auth
	}
	return p.AuthConfig
}

// destinations returns, for each credential key p sends, the origins it
// goes to: an oauth2 client id and secret to the token_url's, the rest to
// the base_url's, or to the MCP server's for a plugin of type mcp. A
// plugin of type mcp whose server is unknown, disabled or stdio sends
// nothing anywhere.
func (idx *catalogIndex) destinations(p *plugins.Plugin) map[string][]string {
	out := map[string][]string{}
	if p.ExecType() == plugins.TypeMCP {
		srv := idx.servers[p.Execution.MCPID]
		if srv.origin != "" {
			for _, k := range srv.auth.CredentialKeys() {
				out[k] = []string{srv.origin}
			}
		}
		return out
	}
	return Destinations(p.AuthConfig, Origin(p.Execution.BaseURL))
}

// Destinations returns, for each credential key cfg reads, the origins it
// is sent to when the request goes to origin: every key to origin, and an
// oauth2 client id and secret to the token_url's origin as well. The
// token those fetch goes to origin: it is as good as the client secret
// there, so a client secret bound to the token_url alone would let any
// plugin reusing that token_url hand the token to a host of its choosing.
func Destinations(cfg plugins.AuthConfig, origin string) map[string][]string {
	out := map[string][]string{}
	for _, k := range cfg.CredentialKeys() {
		out[k] = []string{origin}
	}
	if o := cfg.OAuth2; cfg.Type == plugins.AuthOAuth2 && o != nil && o.EffectiveGrant() == plugins.GrantClientCredentials {
		for _, k := range []string{o.ClientID, o.ClientSecret} {
			if t := Origin(o.TokenURL); k != "" && !slices.Contains(out[k], t) {
				out[k] = append(out[k], t)
			}
		}
	}
	return out
}

// CheckOrigins applies the origin rule to a call of p using the stored
// credentials keys (those not given in the payload): an
// *UnboundCredentialError for the first key, in order, that p would send
// to an origin no enabled catalog plugin sends it to.
func (c *Catalog) CheckOrigins(ctx context.Context, p *plugins.Plugin, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	var refusal error
	for _, recheck := range []bool{false, true} {
		idx, err := c.index(ctx, recheck)
		if err != nil {
			return err
		}
		if refusal = idx.check(p, keys); refusal == nil {
			return nil
		}
	}
	return refusal
}

func (idx *catalogIndex) check(p *plugins.Plugin, keys []string) error {
	dest := idx.destinations(p)
	for _, k := range slices.Sorted(slices.Values(keys)) {
		for _, o := range dest[k] {
			if !slices.Contains(idx.origins[k], o) {
				return &UnboundCredentialError{Key: k, Origin: o}
			}
		}
	}
	return nil
}

// IsIdentifier reports whether the enabled catalog reads key, and only as
// an identifier (a basic-auth username, an oauth2 client id, a mapping
// entry marked "secret": false).
func (c *Catalog) IsIdentifier(ctx context.Context, key string) (bool, error) {
	for _, recheck := range []bool{false, true} {
		idx, err := c.index(ctx, recheck)
		if err != nil {
			return false, err
		}
		if secret, read := idx.secret[key]; read && !secret {
			return true, nil
		}
	}
	return false, nil
}

// Origin is the origin of an absolute URL: lower-case scheme and host and
// an explicit port ("https://api.example:443"). Text that is not an
// absolute URL is its own origin, so that it matches only itself.
func Origin(rawURL string) string {
	i := strings.Index(rawURL, "://")
	if i < 0 {
		return rawURL
	}
	end := len(rawURL)
	if j := strings.IndexAny(rawURL[i+3:], "/?#"); j >= 0 {
		end = i + 3 + j
	}
	u, err := url.Parse(rawURL[:end])
	if err != nil || u.Host == "" {
		return rawURL[:end]
	}
	return egress.OriginOf(u)
}
