package importer

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

// settleHosts disables each converted plugin that would send a stored
// credential key to an origin no enabled catalog plugin sends it to,
// when enabled plugins use that key already (review 73b): a key is
// named after the document's title, so a document titled like an API
// the catalog calls, or a sync that moves a source's server, would
// otherwise send the users' keys stored for that API to another host
// with nobody deciding it. The warning names the key and both origins;
// the administrator enables the plugin once the new host is trusted, or
// imports with a prefix of its own. A key no catalog row reads is the
// document's own; one only disabled rows read is not (review 74): a
// sync that removed a source's operations, then brought them back on
// another host, would move the users' keys in two steps.
// notFixed stands for the origin of a templated host or an MCP server.
const notFixed = "an origin not fixed"

func settleHosts(ctx context.Context, st *store.Store, ops []openapi.Operation) error {
	wanted := map[string]bool{}
	for _, op := range ops {
		if op.Plugin.Status != plugins.StatusDisabled {
			for _, k := range op.Plugin.Credentials() {
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
	// key -> origin -> an enabled plugin sending it there; a key some
	// row reads has a map, empty when only disabled rows read it.
	known := map[string]map[string]string{}
	for i := range rows {
		if !mentionsAny(rows[i].RequiredCredentials, wanted) && !mentionsAny(rows[i].ExecutionConfig, wanted) {
			continue // most rows: not decoded
		}
		p, err := catalog.PluginFromRow(&rows[i])
		if err != nil {
			continue // unreadable: it sends nothing
		}
		for k, origin := range credentialOrigins(p) {
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
	for i := range ops {
		p := ops[i].Plugin
		if p.Status == plugins.StatusDisabled {
			continue // sends nothing
		}
		sends := credentialOrigins(p)
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
			ops[i].Warnings = append(ops[i].Warnings, msg)
			if p.Status != plugins.StatusDisabled { // the first key's reason
				p.Status, p.Remark = plugins.StatusDisabled, plugins.Cut(msg, 500) // the remark column's size
			}
		}
	}
	return nil
}

// credentialOrigins says where p sends each stored credential key it
// reads: an oauth2 client's id and secret to the token URL's origin,
// every other key to the base URL's; "" where the origin is not fixed (a
// templated host, an MCP server's).
func credentialOrigins(p *plugins.Plugin) map[string]string {
	out := map[string]string{}
	base := ""
	if p.ExecType() == plugins.TypeHTTP {
		base = auth.Origin(p.Execution.BaseURL)
	}
	a := p.AuthConfig
	for _, k := range p.Credentials() {
		out[k] = base
		if a.Type == plugins.AuthOAuth2 && a.OAuth2 != nil && a.OAuth2.EffectiveGrant() == plugins.GrantClientCredentials &&
			(k == a.OAuth2.ClientID || k == a.OAuth2.ClientSecret) {
			out[k] = auth.Origin(a.OAuth2.TokenURL)
		}
	}
	return out
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
