package auth

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// Where the users' stored keys go (review 73b, hosts76): a stored key
// goes only to the origins the enabled catalog plugins send it to, when
// catalog plugins read it. The import decides it on what it writes
// (importer.settleHosts: imported disabled), the executor on every call
// of a plugin that is not a catalog row (Catalog.Elsewhere: refused), from
// the same functions below.

// NotFixed stands for the origin of a templated host (or of an MCP
// server gone).
const NotFixed = "an origin not fixed"

// ServerSends is where an MCP server's tools send its users' keys: its
// URL's origin, or for a stdio server "stdio:" and its id (the command
// the administrator registered: that server, and no other, is where its
// rows send them); "" for a server gone. Keys are those its auth config
// reads.
type ServerSends struct {
	Origin string
	Keys   []string
	// Auth is the server's auth config over HTTP (zero for stdio, which
	// is given no credential): an oauth2 client's id and secret go to its
	// token URL, not to Origin (review77).
	Auth plugins.AuthConfig
}

// ServerSendsOf is where the tools of the server row send its keys.
func ServerSendsOf(row *store.MCPServer) ServerSends {
	cfg, _ := catalog.MCPServerAuth(row) // unreadable: no call of it authenticates
	s := ServerSends{Origin: Origin(row.URL), Keys: cfg.CredentialKeys(), Auth: cfg}
	if row.Transport == store.TransportStdio {
		s.Origin, s.Auth = "stdio:"+row.ID, plugins.AuthConfig{}
	}
	return s
}

// SentKeys are the stored keys a call of p sends: those it lists and
// those its auth config reads, as the engine resolves them
// (required_credentials may list fewer: RuoYi writes an empty list as []).
func SentKeys(p *plugins.Plugin) []string {
	return append(slices.Clone(p.Credentials()), p.AuthConfig.CredentialKeys()...)
}

// KeyOrigins says where p sends each stored credential key it reads: an
// oauth2 client's id and secret to the token URL's origin, and the token
// they buy to the base URL's (ClientSends), every other key to the base
// URL's, or, for a tool of an MCP server (srv, read only then), the
// server's auth config's keys and its own to the server's URL's, its
// oauth2 client's to its token URL's for a token to the server's
// (ServerSends); "" where the origin is not fixed (a templated host).
func KeyOrigins(p *plugins.Plugin, srv ServerSends) map[string]string {
	base := ""
	keys := SentKeys(p)
	a := p.AuthConfig
	switch {
	case p.ExecType() == plugins.TypeHTTP:
		base = Origin(p.Execution.BaseURL)
	case p.Execution.MCPID != "": // an MCP row, or the proxy's tool without one
		// The server's auth config is what its tools send, whatever
		// their rows list, and it is the one that authenticates them.
		base, keys, a = srv.Origin, append(keys, srv.Keys...), srv.Auth
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = base
		if a.Type == plugins.AuthOAuth2 && a.OAuth2 != nil && a.OAuth2.EffectiveGrant() == plugins.GrantClientCredentials &&
			(k == a.OAuth2.ClientID || k == a.OAuth2.ClientSecret) {
			out[k] = ClientSends(Origin(a.OAuth2.TokenURL), base)
		}
	}
	return out
}

// ClientSends is where an oauth2 client's id and secret go: to the token
// URL's origin, for a token sent to api's. Both are where the client's
// keys go: the token bought with them calls the API as the user, so a
// plugin with the catalog's token URL and the catalog's client keys
// sending its token elsewhere is no catalog plugin's way (review78); ""
// when either is not fixed.
func ClientSends(tokenOrigin, api string) string {
	if tokenOrigin == "" || api == "" {
		return ""
	}
	return tokenOrigin + " (a token for " + api + ")"
}

// KeySends is, per stored key catalog plugins read, the origins enabled
// plugins send it to, each with the first such plugin's name; a key only
// disabled plugins read has an empty map (it is no newcomer's own).
type KeySends map[string]map[string]string

// Add records that the catalog plugin p sends the keys of sends (its
// KeyOrigins) where they say.
func (ks KeySends) Add(p *plugins.Plugin, sends map[string]string) {
	for k, origin := range sends {
		if ks[k] == nil {
			ks[k] = map[string]string{}
		}
		if _, ok := ks[k][origin]; !ok && p.Enabled() {
			ks[k][origin] = p.Name
		}
	}
}

// Elsewhere is nil when key may go to origin: no catalog plugin reads
// key (it is the sender's own), or an enabled one sends it to origin, a
// fixed one. Else an *ElsewhereError.
func (ks KeySends) Elsewhere(key, origin string) *ElsewhereError {
	there, used := ks[key]
	if !used || origin != "" && there[origin] != "" {
		return nil
	}
	return &ElsewhereError{Key: key, Origin: origin, There: there}
}

// ElsewhereError says a stored key would go to Origin ("": not fixed)
// while the enabled catalog plugins send it to There (origin → a
// plugin's name; empty: only disabled plugins read it). It names the
// key, never its value.
type ElsewhereError struct {
	Key, Origin string
	There       map[string]string
}

func (e *ElsewhereError) Error() string {
	var there []string
	for _, o := range slices.Sorted(maps.Keys(e.There)) {
		there = append(there, fmt.Sprintf("%s (plugin %s)", cmp.Or(o, NotFixed), e.There[o]))
	}
	goes := "only disabled plugins read it"
	if len(there) > 0 {
		goes = "it goes to " + strings.Join(there, ", ")
	}
	return fmt.Sprintf("credential %s: sent to %s, where no enabled plugin sends it (%s)", e.Key, cmp.Or(e.Origin, NotFixed), goes)
}

// Origins are the origins the enabled catalog plugins send the key to,
// sorted ("" for one not fixed).
func (e *ElsewhereError) Origins() []string { return slices.Sorted(maps.Keys(e.There)) }
