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

// The binding rule: for any caller but the administrator, an inline plugin
// (one a request defines) whose call would take a credential from the
// store is the enabled catalog plugin of the same name — equal to it in
// execution, auth_config, fixed_params and required_credentials, its
// parameters the row's but for descriptions and optional properties left
// out (plugins.Difference) — and the call is then that row's: its fixed
// params, its schema, its masking classes. Otherwise it is refused before
// anything is sent. The catalog is the administrator's, so the rule holds
// inline plugins to what the administrator decided; the administrator's
// own inline plugins are exempt, as are inline plugins whose credentials
// all come in the payload (the caller's own). The executor enforces it
// (engine.Call.Inline and Owner) through Catalog.Bind, the one place the
// rule is decided.

// ErrCredentialNotBound is wrapped by the error refusing an inline plugin
// the use of stored credentials.
var ErrCredentialNotBound = errors.New("an inline plugin using stored credentials must be the enabled catalog plugin of the same name (equal in execution, auth_config, fixed_params and required_credentials; its parameters the row's but for descriptions and optional properties left out)")

// UnboundCredentialError refuses the inline plugin Plugin the stored
// credential Key. Field is the first field in which it differs from the
// catalog plugin of its name, "" when no enabled catalog plugin has the
// name. It names keys and fields, never a value.
type UnboundCredentialError struct {
	Key, Plugin, Field string
}

func (e *UnboundCredentialError) Error() string {
	why := fmt.Sprintf("no enabled catalog plugin is named %q", e.Plugin)
	if e.Field != "" {
		why = fmt.Sprintf("it differs from the catalog plugin %s in %s", e.Plugin, e.Field)
	}
	return fmt.Sprintf("stored credential %s may not be used by the inline plugin %s: %s; %v", e.Key, e.Plugin, why, ErrCredentialNotBound)
}

func (e *UnboundCredentialError) Unwrap() error { return ErrCredentialNotBound }

// CatalogSource holds the MCP servers a Catalog indexes; *store.Store
// implements it.
type CatalogSource interface {
	ListMCPServers(ctx context.Context) ([]store.MCPServer, error)
}

// Served is the catalog the engine serves (*catalog.Catalog implements
// it): its enabled plugins are those the rules bind to, so that a row it
// leaves out — one breaking the protocol, RuoYi's SQL — binds no copy
// and is no call's current row either (review 74).
type Served interface {
	// RowsAt is the enabled plugins, every plugin (enabled or not), the
	// rows it leaves out that decode, and the plugins' counter value they
	// are of (older than the counter while the catalog serves what it
	// held, a reload having failed).
	RowsAt(ctx context.Context) (enabled, all, unserved []*plugins.Plugin, version int64, err error)
}

// Catalog answers the questions the credential rules ask of the enabled
// catalog: which catalog plugin an inline plugin using stored credentials
// stands for (the binding rule), and whether a key is only ever read as
// an identifier (its masking class, and whether a short value may be
// stored). It reads the catalog again when the plugins' or MCP servers'
// change counter moved, and, at most once a second, before refusing: a
// plugin just added elsewhere is honoured at once, one just disabled after
// one poll. It is safe for concurrent use.
type Catalog struct {
	src     CatalogSource
	served  Served
	changes Versions

	mu       sync.Mutex
	idx      *catalogIndex
	loaded   time.Time
	failedAt time.Time // when the last read failed (zero once one succeeds)
	failed   error     // why
	version  [2]int64  // the plugins' and MCP servers' counters idx was read at
}

// catalogIndex is what the enabled catalog does with each credential key.
type catalogIndex struct {
	plugins map[string]*plugins.Plugin // name → the enabled catalog plugin
	secret  map[string]bool            // key → read as a secret somewhere (false: only as an identifier)
	empty   map[string]bool            // key → read somewhere as a basic-auth password, which may be empty
	// origins are, per OAuth provider, the origins (scheme://host[:port],
	// lower case) of the enabled catalog plugins using a connection to it:
	// where its users' tokens may go.
	origins map[string]map[string]bool
	// sends is where the catalog's plugins send each stored key
	// (Elsewhere).
	sends KeySends

	mu sync.Mutex
	// diffs remembers Difference for the inline plugins seen (parsed
	// payload plugins are shared by their bytes: RuoYi's copies come back
	// call after call), while the index lasts; cleared when full.
	diffs map[*plugins.Plugin]string
}

const diffsMax = 1024

// catalogRetry is the least time between two reads of the catalog made to
// check a refusal.
const catalogRetry = time.Second

// NewCatalog returns a Catalog of the plugins served and src's MCP
// servers, following changes (a *store.Watcher).
func NewCatalog(src CatalogSource, served Served, changes Versions) *Catalog {
	return &Catalog{src: src, served: served, changes: changes}
}

// index returns the index, read afresh when the counters moved or, with
// recheck, when older than catalogRetry. A read that fails serves the
// index held, as the catalog does (catalog.Catalog), and for
// catalogRetry after without asking again: a database that does not
// answer holds one read (store.QueryTimeout), not every call's in turn.
func (c *Catalog) index(ctx context.Context, recheck bool) (*catalogIndex, error) {
	v := c.changes.Current()
	version := [2]int64{v.Plugins, v.MCPServers}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idx != nil && c.version == version && (!recheck || time.Since(c.loaded) < catalogRetry) {
		return c.idx, nil
	}
	if time.Since(c.failedAt) < catalogRetry { // a read failed a moment ago, maybe while this call waited
		if c.idx != nil {
			return c.idx, nil
		}
		return nil, c.failed
	}
	// Bounded, and not the call's cancellation: the calls queued on mu
	// wait for it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.QueryTimeout)
	idx, served, err := readCatalog(rctx, c.src, c.served)
	cancel()
	if err != nil {
		c.failedAt, c.failed = time.Now(), err
		if c.idx != nil {
			return c.idx, nil
		}
		return nil, err
	}
	c.idx, c.loaded, c.version, c.failedAt, c.failed = idx, time.Now(), [2]int64{served, v.MCPServers}, time.Time{}, nil
	if served < v.Plugins {
		// The catalog serves what it held, its reload failed: this index
		// is of that, read again once the catalog reloads (review 75: kept
		// as the counter's, a row disabled or narrowed then bound as it
		// was until the next change).
		c.failedAt = c.loaded
	}
	return idx, nil
}

// readCatalog reads the index, and the plugins' counter value it is of.
func readCatalog(ctx context.Context, src CatalogSource, served Served) (*catalogIndex, int64, error) {
	servers, err := src.ListMCPServers(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("read the catalog: %w", err)
	}
	idx := &catalogIndex{plugins: map[string]*plugins.Plugin{}, secret: map[string]bool{}, empty: map[string]bool{},
		origins: map[string]map[string]bool{}, sends: KeySends{}}
	classify := func(cfg plugins.AuthConfig) {
		ids := cfg.IdentifierKeys()
		for _, k := range cfg.CredentialKeys() {
			idx.secret[k] = idx.secret[k] || !slices.Contains(ids, k)
			idx.empty[k] = idx.empty[k] || cfg.MayBeEmpty(k)
		}
	}
	// Where each server's tools send its keys, by its id and name (an id
	// winning), as a catalog row's mcp_id names it.
	sendsOf := make(map[string]ServerSends, len(servers))
	for i := range servers {
		sendsOf[servers[i].ID] = ServerSendsOf(&servers[i])
	}
	for i := range servers {
		if _, ok := sendsOf[servers[i].Name]; !ok {
			sendsOf[servers[i].Name] = sendsOf[servers[i].ID]
		}
	}
	for _, s := range servers {
		if cfg, err := catalog.MCPServerAuth(&s); err == nil && s.Status == store.StatusEnabled {
			classify(cfg) // what an enabled server's auth reads, whether or not a plugin calls it
		}
	}
	enabled, all, unserved, version, err := served.RowsAt(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("read the catalog: %w", err)
	}
	for _, p := range all {
		idx.sends.Add(p, KeyOrigins(p, sendsOf[p.Execution.MCPID]))
	}
	for _, p := range unserved {
		// A row left out sends nothing, but the users' keys stored for
		// it are the catalog's, as the import counts them (settleHosts
		// reads the rows): no other server's own (review77).
		off := *p
		off.Status = plugins.StatusDisabled
		idx.sends.Add(&off, KeyOrigins(p, sendsOf[p.Execution.MCPID]))
	}
	for _, p := range enabled {
		idx.plugins[p.Name] = p
		classify(p.AuthConfig)
		if prov := p.AuthConfig.ConnectionProvider(); prov != "" {
			if o := Origin(p.Execution.BaseURL); o != "" {
				if idx.origins[prov] == nil {
					idx.origins[prov] = map[string]bool{}
				}
				idx.origins[prov][o] = true
			}
		}
	}
	return idx, version, nil
}

// Origin is scheme://host[:port] of an absolute URL, in lower case, the
// host the one the client dials (egress.Hostname: a Unicode name as its
// IDNA ASCII form), the port as written; "" when it has none, when its
// host is a template ({region}.api.com) or a name IDNA refuses (the
// client would dial its bytes): such a plugin names no fixed origin, and
// no connection token goes to it. Lower-casing a Unicode host as text gave
// hosts dialled apart one origin (review78, fuzz78: apİ.example, dialled
// xn--api-bec.example; a byte not UTF-8 lowered to U+FFFD). An IPv6
// address with a zone ([fe80::1%25eth0]) names none either: the zone is a
// local interface's name, in which case counts (fuzz78).
func Origin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" || strings.ContainsAny(u.Host, "{}%") {
		return ""
	}
	host, ok := egress.Hostname(u)
	if !ok {
		return ""
	}
	port := "" // as written: ":443" and ":" are other origins than none
	if i := strings.LastIndexByte(u.Host, ':'); i >= 0 && !strings.HasSuffix(u.Host, "]") {
		port = u.Host[i:]
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return strings.ToLower(u.Scheme) + "://" + host + port
}

// ServesProvider reports whether an enabled catalog plugin using a
// connection to provider calls origin (as Origin writes it): the one
// place a user's connection token may go besides the provider itself.
func (c *Catalog) ServesProvider(ctx context.Context, provider, origin string) (bool, error) {
	for _, recheck := range []bool{false, true} {
		idx, err := c.index(ctx, recheck)
		if err != nil {
			return false, err
		}
		if idx.origins[provider][origin] {
			return true, nil
		}
	}
	return false, nil
}

// Bind applies the binding rule to an inline plugin p whose call would
// take the credentials storedKeys from the store: the enabled catalog
// plugin p stands for, which the call then is, or an
// *UnboundCredentialError naming the first stored key and the first field
// that differs.
func (c *Catalog) Bind(ctx context.Context, p *plugins.Plugin, storedKeys []string) (*plugins.Plugin, error) {
	var refusal error
	for _, recheck := range []bool{false, true} {
		idx, err := c.index(ctx, recheck)
		if err != nil {
			return nil, err
		}
		row := idx.plugins[p.Name]
		field := ""
		if row != nil {
			if field = idx.difference(row, p); field == "" {
				return row, nil
			}
		}
		refusal = &UnboundCredentialError{Key: slices.Min(storedKeys), Plugin: p.Name, Field: field}
	}
	return nil, refusal
}

// Elsewhere refuses the call of p, a plugin that is no catalog row (the
// MCP proxy's tool without one), taking keys from the store, when one of
// them would go to an origin no enabled catalog plugin sends it to while
// catalog plugins read it (KeySends.Elsewhere, the import's rule): an
// *ElsewhereError for the first such key, sorted. srv is p's MCP server
// as the call reads it (ServerSendsOf its row; zero for another plugin),
// not the index's copy, which lags a server registered anew under the
// same id elsewhere until the next poll (review79). Read again, at most
// once a second, before refusing: a row just enabled counts at once.
func (c *Catalog) Elsewhere(ctx context.Context, p *plugins.Plugin, srv ServerSends, keys []string) error {
	var refusal error
	for _, recheck := range []bool{false, true} {
		idx, err := c.index(ctx, recheck)
		if err != nil {
			return err
		}
		refusal = nil
		sends := KeyOrigins(p, srv)
		for _, k := range slices.Sorted(slices.Values(keys)) {
			if e := idx.sends.Elsewhere(k, sends[k]); e != nil {
				refusal = e
				break
			}
		}
		if refusal == nil {
			return nil
		}
	}
	return refusal
}

// Row returns the enabled catalog plugin named name, nil when there is
// none (read again, at most once a second, before saying so).
func (c *Catalog) Row(ctx context.Context, name string) (*plugins.Plugin, error) {
	for _, recheck := range []bool{false, true} {
		idx, err := c.index(ctx, recheck)
		if err != nil {
			return nil, err
		}
		if row := idx.plugins[name]; row != nil {
			return row, nil
		}
	}
	return nil, nil
}

// Copy returns the enabled catalog plugin the inline plugin p is a copy
// of (Bind's equality, remembered per plugin as Bind remembers it), nil
// when p is none's: an inline plugin taking nothing from the store is
// that row all the same (engine: its classification, quotas, egress).
func (c *Catalog) Copy(ctx context.Context, p *plugins.Plugin) (*plugins.Plugin, error) {
	for _, recheck := range []bool{false, true} {
		idx, err := c.index(ctx, recheck)
		if err != nil {
			return nil, err
		}
		if row := idx.plugins[p.Name]; row != nil && idx.difference(row, p) == "" {
			return row, nil
		}
	}
	return nil, nil
}

func (idx *catalogIndex) difference(row, p *plugins.Plugin) string {
	idx.mu.Lock()
	d, ok := idx.diffs[p]
	idx.mu.Unlock()
	if ok {
		return d
	}
	d = plugins.Difference(row, p)
	idx.mu.Lock()
	if idx.diffs == nil || len(idx.diffs) >= diffsMax {
		idx.diffs = map[*plugins.Plugin]string{}
	}
	idx.diffs[p] = d
	idx.mu.Unlock()
	return d
}

// IsIdentifier reports whether the enabled catalog reads key, and only as
// an identifier (a basic-auth username, an oauth2 client id, a mapping
// entry marked "secret": false), in a plugin's or an MCP server's auth
// config.
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

// MayBeEmpty reports whether the enabled catalog reads key as a basic-auth
// password somewhere: an empty value of it is then a credential, stored
// as one.
func (c *Catalog) MayBeEmpty(ctx context.Context, key string) (bool, error) {
	for _, recheck := range []bool{false, true} {
		idx, err := c.index(ctx, recheck)
		if err != nil {
			return false, err
		}
		if idx.empty[key] {
			return true, nil
		}
	}
	return false, nil
}

// Identifiers returns those of keys the enabled catalog reads only as
// identifiers: the masking classes of stored credentials, which nothing a
// caller sends can loosen. Every other key is a secret.
func (c *Catalog) Identifiers(ctx context.Context, keys []string) ([]string, error) {
	idx, err := c.index(ctx, false)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, k := range keys {
		if secret, read := idx.secret[k]; read && !secret {
			ids = append(ids, k)
		}
	}
	return ids, nil
}
