package importer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

// Provider outcomes of an import.
const (
	ProviderMatched = "matched" // a registered provider has the flow's URLs
	ProviderCreated = "created" // registered disabled: no client yet (in a dry run: would be)
)

// ProviderResult is an OAuth provider the imported plugins connect users
// to (issue 34): a registered one matched by its authorization and token
// URLs, or one the import created disabled — the administrator registers
// the engine as a client at the provider (the redirect URI
// <BLINDEXEC_BROWSER_URL>/oauth/callback), sets client_id and
// client_secret, and enables it.
type ProviderResult struct {
	Name             string   `json:"name"`
	Status           string   `json:"status"` // ProviderMatched or ProviderCreated
	Enabled          bool     `json:"enabled"`
	AuthorizationURL string   `json:"authorization_url"`
	TokenURL         string   `json:"token_url"`
	Plugins          []string `json:"plugins"`
}

// maxNameTries bounds the names tried for a created provider whose
// proposed name another provider holds.
const maxNameTries = 20

// settleProviders matches or creates (not in a dry run) the provider of
// each authorization-code flow the operations name, and names the
// provider chosen in their plugins. A created provider asks for the
// scopes the imported operations need (least privilege), not every scope
// the document declares. Providers hold no secret the import writes, so
// the service needs no key.
func settleProviders(ctx context.Context, st *store.Store, ops []openapi.Operation, res *SyncResult, dryRun bool) error {
	svc := &connections.Service{Store: st}
	var order []string
	using := map[string][]openapi.Operation{} // by proposed name
	for _, op := range ops {
		if op.Provider != nil {
			if using[op.Provider.Name] == nil {
				order = append(order, op.Provider.Name)
			}
			using[op.Provider.Name] = append(using[op.Provider.Name], op)
		}
	}
	for _, name := range order {
		var scopes []string
		for _, op := range using[name] {
			scopes = append(scopes, op.Plugin.AuthConfig.OAuth2.Scopes...)
		}
		slices.Sort(scopes)
		r, err := settleProvider(ctx, svc, using[name][0].Provider, slices.Compact(scopes), dryRun)
		if err != nil {
			return fmt.Errorf("provider %s: %w", name, err)
		}
		for _, op := range using[name] {
			op.Plugin.AuthConfig.OAuth2.Provider = r.Name
			op.Provider.Name = r.Name
			r.Plugins = append(r.Plugins, op.Plugin.Name)
		}
		res.Providers = append(res.Providers, r)
	}
	return nil
}

// settleProvider is the provider of one flow: the registered one with
// its URLs, else a new one, disabled, under the proposed name (or the
// first of name_2, name_3… no provider holds).
func settleProvider(ctx context.Context, svc *connections.Service, prop *openapi.Provider, scopes []string, dryRun bool) (*ProviderResult, error) {
	r := &ProviderResult{AuthorizationURL: prop.AuthorizationURL, TokenURL: prop.TokenURL}
	p, ok, err := svc.MatchProvider(ctx, prop.AuthorizationURL, prop.TokenURL)
	if err != nil {
		return nil, err
	}
	if ok {
		r.Name, r.Status, r.Enabled = p.Name, ProviderMatched, p.Enabled
		return r, nil
	}
	r.Status = ProviderCreated
	for i := 1; i <= maxNameTries; i++ {
		name := prop.Name
		if i > 1 {
			suffix := fmt.Sprintf("_%d", i)
			name = prop.Name[:min(len(prop.Name), 64-len(suffix))] + suffix
		}
		r.Name = name
		if dryRun {
			_, err := svc.Provider(ctx, name)
			if errors.Is(err, connections.ErrNoProvider) {
				return r, nil
			}
			if err != nil {
				return nil, err
			}
			continue // another provider's name
		}
		// Create-only: a provider registered under the name, meanwhile
		// too, is left as it is.
		_, err := svc.CreateProvider(ctx, connections.Provider{Name: name, AuthorizationURL: prop.AuthorizationURL,
			TokenURL: prop.TokenURL, Scopes: scopes, PKCE: true, Enabled: false})
		if errors.Is(err, connections.ErrProviderExists) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("the names %s to %s_%d are all taken by other providers", prop.Name, prop.Name, maxNameTries)
}
