package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

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
			for _, k := range auth.SentKeys(p) {
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
	where := origins{st: st, servers: map[string]auth.ServerSends{}}
	// What enabled rows send where, of the keys wanted; a key some row
	// reads has a map, empty when only disabled rows read it.
	known := auth.KeySends{}
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
		maps.DeleteFunc(sends, func(k, _ string) bool { return !wanted[k] })
		known.Add(p, sends)
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
			elsewhere := known.Elsewhere(k, sends[k])
			if elsewhere == nil {
				continue
			}
			msg := elsewhere.Error() + fmt.Sprintf("; imported disabled: "+
				"enable it once that host may have the users' %s, or import with a prefix for a key of its own", k)
			warn(i, msg)
			if p.Status != plugins.StatusDisabled { // the first key's reason
				p.Status, p.Remark = plugins.StatusDisabled, plugins.Cut(msg, 500) // the remark column's size
			}
		}
	}
	return nil
}

// origins says where plugins send their stored credential keys
// (auth.KeyOrigins), each MCP server read once.
type origins struct {
	st      *store.Store
	servers map[string]auth.ServerSends // by a plugin's mcp_id
}

// of is auth.KeyOrigins of p, its MCP server read from the store (a
// server gone sends nothing).
func (o *origins) of(ctx context.Context, p *plugins.Plugin) (map[string]string, error) {
	var srv auth.ServerSends
	if ref := p.Execution.MCPID; ref != "" {
		var ok bool
		if srv, ok = o.servers[ref]; !ok {
			row, err := o.st.GetMCPServer(ctx, ref)
			switch {
			case err == nil:
				srv = auth.ServerSendsOf(row)
			case !errors.Is(err, store.ErrNotFound):
				return nil, err
			}
			o.servers[ref] = srv
		}
	}
	return auth.KeyOrigins(p, srv), nil
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
