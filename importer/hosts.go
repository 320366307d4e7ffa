package importer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// settleHosts disables each imported plugin of ps that would send a
// stored credential key to an origin no enabled catalog plugin sends it
// to, when catalog plugins use that key already (review 73b): a key is
// named after the document's title, or read by an MCP server's auth
// config, so a document titled like an API the catalog calls, a sync
// that moves a source's server, or an MCP server registered elsewhere
// reading that API's key, would otherwise send the users' keys stored
// for that API to another host with nobody deciding it. warn is told,
// by index in ps, each key's warning, which names the key and both
// origins; the administrator enables the plugin once the new host is
// trusted, or imports with a prefix of its own. A key no catalog row
// reads is the import's own; one only disabled rows read is not (review
// 74): a sync that removed a source's operations, then brought them back
// on another host, would move the users' keys in two steps. OpenAPI and
// MCP imports both decide here.
func settleHosts(ctx context.Context, st *store.Store, ps []*plugins.Plugin, warn func(i int, msg string)) error {
	wanted := map[string]bool{}
	for _, p := range ps {
		if p.Status != plugins.StatusDisabled {
			for _, k := range sentKeys(p) {
				wanted[k] = true
			}
		}
	}
	if len(wanted) == 0 {
		return nil
	}
	rows, err := st.ListPlugins(ctx, store.PluginFilter{})
	if err != nil {
		return err
	}
	servers, err := st.ListMCPServers(ctx)
	if err != nil {
		return err
	}
	// The MCP servers reading a key wanted, by id and name (what a row's
	// mcp_id holds): their tools' rows send it, whatever they list.
	readers := map[string]bool{}
	for i := range servers {
		if cfg, err := catalog.MCPServerAuth(&servers[i]); err == nil && slices.ContainsFunc(cfg.CredentialKeys(), func(k string) bool { return wanted[k] }) {
			readers[servers[i].ID], readers[servers[i].Name] = true, true
		}
	}
	where := origins{st: st, servers: map[string]server{}}
	// key -> origin -> an enabled plugin sending it there; a key some
	// row reads has a map, empty when only disabled rows read it.
	known := map[string]map[string]string{}
	for i := range rows {
		if !mentionsAny(rows[i].RequiredCredentials, wanted) && !mentionsAny(rows[i].ExecutionConfig, wanted) && !mentionsAny(rows[i].ExecutionConfig, readers) {
			continue // most rows: not decoded
		}
		p, err := catalog.PluginFromRow(&rows[i])
		if err != nil {
			continue // unreadable: it sends nothing
		}
		sends, err := where.of(ctx, p)
		if err != nil {
			return err
		}
		for k, origin := range sends {
			if !wanted[k] {
				continue
			}
			if known[k] == nil {
				known[k] = map[string]string{}
			}
			if _, ok := known[k][origin]; !ok && p.Enabled() {
				known[k][origin] = p.Name
			}
		}
	}
	for i, p := range ps {
		if p.Status == plugins.StatusDisabled {
			continue // sends nothing
		}
		sends, err := where.of(ctx, p)
		if err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(sends)) {
			origin := sends[k]
			elsewhere, used := known[k]
			if !used || origin != "" && elsewhere[origin] != "" {
				continue
			}
			var there []string
			for _, o := range slices.Sorted(maps.Keys(elsewhere)) {
				there = append(there, fmt.Sprintf("%s (plugin %s)", cmp.Or(o, notFixed), elsewhere[o]))
			}
			goes := "only disabled plugins read it"
			if len(there) > 0 {
				goes = "it goes to " + strings.Join(there, ", ")
			}
			msg := fmt.Sprintf("credential %s: sent to %s, where no enabled plugin sends it (%s); imported disabled: "+
				"enable it once that host may have the users' %s, or import with a prefix for a key of its own",
				k, cmp.Or(origin, notFixed), goes, k)
			warn(i, msg)
			if p.Status != plugins.StatusDisabled { // the first key's reason
				p.Status, p.Remark = plugins.StatusDisabled, plugins.Cut(msg, 500) // the remark column's size
			}
		}
	}
	return nil
}

// notFixed stands for the origin of a templated host or a stdio MCP
// server.
const notFixed = "an origin not fixed"

// origins says where plugins send their stored credential keys, each
// MCP server read once.
type origins struct {
	st      *store.Store
	servers map[string]server // by a plugin's mcp_id
}

// server is where an MCP server's tools send its keys: its URL's origin
// ("" for a stdio server's command, or a server gone), and the keys its
// auth config reads.
type server struct {
	origin string
	keys   []string
}

// of says where p sends each stored credential key it reads: an oauth2
// client's id and secret to the token URL's origin, every other key to
// the base URL's, or an MCP plugin's to its server's URL's; "" where the
// origin is not fixed (a templated host, a stdio server's command).
func (o *origins) of(ctx context.Context, p *plugins.Plugin) (map[string]string, error) {
	out := map[string]string{}
	base := ""
	keys := sentKeys(p)
	switch p.ExecType() {
	case plugins.TypeHTTP:
		base = auth.Origin(p.Execution.BaseURL)
	case plugins.TypeMCP:
		srv, ok := o.servers[p.Execution.MCPID]
		if !ok {
			row, err := o.st.GetMCPServer(ctx, p.Execution.MCPID)
			switch {
			case err == nil:
				if row.Transport != store.TransportStdio {
					srv.origin = auth.Origin(row.URL)
				}
				cfg, _ := catalog.MCPServerAuth(row) // unreadable: no call of it authenticates
				srv.keys = cfg.CredentialKeys()
			case !errors.Is(err, store.ErrNotFound): // a server gone sends nothing
				return nil, err
			}
			o.servers[p.Execution.MCPID] = srv
		}
		// The server's auth config is what its tools send, whatever
		// their rows list.
		base, keys = srv.origin, append(keys, srv.keys...)
	}
	a := p.AuthConfig
	for _, k := range keys {
		out[k] = base
		if a.Type == plugins.AuthOAuth2 && a.OAuth2 != nil && a.OAuth2.EffectiveGrant() == plugins.GrantClientCredentials &&
			(k == a.OAuth2.ClientID || k == a.OAuth2.ClientSecret) {
			out[k] = auth.Origin(a.OAuth2.TokenURL)
		}
	}
	return out, nil
}

// sentKeys are the stored keys a call of p sends: those it lists and
// those its auth config reads, as the engine resolves them
// (required_credentials may list fewer: RuoYi writes an empty list as []).
func sentKeys(p *plugins.Plugin) []string {
	return append(slices.Clone(p.Credentials()), p.AuthConfig.CredentialKeys()...)
}

// mentionsAny reports whether a column of a row names one of the keys:
// a row whose required_credentials (the effective list) and
// execution_config (its auth config, which that list is derived from
// when NULL: RuoYi's rows) name none reads none.
func mentionsAny(config []byte, keys map[string]bool) bool {
	for k := range keys {
		if bytes.Contains(config, []byte(k)) {
			return true
		}
	}
	return false
}
