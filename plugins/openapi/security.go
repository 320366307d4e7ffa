package openapi

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
)

// auth sets the plugin's auth_config and required_credentials from the
// operation's security requirement (else the document's). Of alternative
// requirements, the first the engine supports wins; one with no scheme
// (anonymous access allowed) only when no other is supported. When none
// is supported, the plugin is disabled with a warning: importing it as
// "none" would send calls the API refuses. It returns the OAuth provider
// an authorization-code config names.
func (c *converter) auth(o rawOperation, p *plugins.Plugin, b *opBuilder) *Provider {
	reqs, ok := o.op["security"]
	if !ok {
		reqs = c.doc.Raw["security"]
	}
	list, _ := reqs.([]any)
	if len(list) == 0 {
		p.AuthConfig = plugins.AuthConfig{Type: plugins.AuthNone}
		return nil
	}
	var (
		anonymous bool
		fallback  *plugins.AuthConfig // a supplied-token config for an unsupported scheme
		reasons   []string
	)
	for _, r := range list {
		req, _ := r.(map[string]any)
		if len(req) == 0 {
			anonymous = true
			continue
		}
		cfg, fb, prov, reason := c.requirement(req)
		if cfg != nil {
			p.AuthConfig = *cfg
			p.RequiredCredentials = cfg.CredentialKeys()
			c.warnPlaintext(req, p, prov, b)
			return prov
		}
		if fallback == nil {
			fallback = fb
		}
		reasons = append(reasons, reason)
	}
	if anonymous {
		p.AuthConfig = plugins.AuthConfig{Type: plugins.AuthNone}
		return nil
	}
	msg := "security: no supported scheme (" + strings.Join(reasons, "; ") + "); imported disabled"
	b.warn("%s", msg)
	p.Status = plugins.StatusDisabled
	p.Remark = plugins.Cut(msg, 500) // the remark column's size
	if fallback != nil {
		p.AuthConfig = *fallback
		p.RequiredCredentials = fallback.CredentialKeys()
	} else {
		// No config the engine could apply; the explicit empty list keeps
		// the plugin from being taken for one that needs nothing.
		p.RequiredCredentials = []string{}
	}
	return nil
}

// warnPlaintext warns of each http:// URL the credentials of requirement
// req would be sent to: imported as the document has it, the call is
// refused at run time (egress.PlaintextError) unless the host is loopback
// or the operator lists it. readme.io's corpus spec has such a tokenUrl.
// Each scheme's URL (the server's by its origin) is warned of once per
// document, on the first operation using it: the same sentence on every
// operation buried the other warnings (tls81).
func (c *converter) warnPlaintext(req map[string]any, p *plugins.Plugin, prov *Provider, b *opBuilder) {
	type sent struct{ scheme, what, url string }
	urls := []sent{{schemeNames(sortedKeys(req)), "the server URL", p.Execution.BaseURL}}
	if o := p.AuthConfig.OAuth2; o != nil {
		urls = append(urls, sent{c.oauth2Scheme(req), "tokenUrl", o.TokenURL})
	}
	if prov != nil {
		scheme := c.oauth2Scheme(req)
		urls = append(urls, sent{scheme, "tokenUrl", prov.TokenURL}, sent{scheme, "refreshUrl", prov.RefreshURL})
	}
	for i, f := range urls {
		u, err := url.Parse(f.url)
		if err != nil || f.url == "" || (*egress.PlaintextHosts)(nil).Allows(u) {
			continue
		}
		at := redact.URL(f.url)
		if i == 0 { // the server's origin: its operations' paths differ
			at = (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
		}
		msg := fmt.Sprintf("security scheme %s: %s %s is http://: the calls of every operation using it will be refused rather than send credentials there in plain text (expected https://, or its host in %s)",
			f.scheme, f.what, at, egress.EnvPlaintextCredentialHosts)
		if !c.warned[msg] {
			c.warned[msg] = true
			b.warn("%s", msg)
		}
	}
}

// oauth2Scheme is the name of req's oauth2 scheme (requirement allows
// one), quoted.
func (c *converter) oauth2Scheme(req map[string]any) string {
	for _, name := range sortedKeys(req) {
		if v, err := c.lookup.Deref(c.schemes[name]); err == nil {
			if s, _ := v.(map[string]any); str(s["type"]) == "oauth2" {
				return quoted(name)
			}
		}
	}
	return schemeNames(sortedKeys(req))
}

// schemeNames is names, each quoted, comma-separated.
func schemeNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoted(n)
	}
	return strings.Join(q, ", ")
}

// requirement converts one security requirement (all of its schemes
// apply): any number of apiKey schemes plus at most one http bearer, http
// basic, oauth2 client-credentials or oauth2 authorization-code scheme
// (with the provider it names). When unsupported, it returns the reason
// and, for OAuth2 and OpenID Connect schemes, a config taking a supplied
// access token.
func (c *converter) requirement(req map[string]any) (cfg, fallback *plugins.AuthConfig, provider *Provider, reason string) {
	out := &plugins.AuthConfig{Type: plugins.AuthAPIKey}
	primary := ""
	for _, name := range sortedKeys(req) {
		v, err := c.lookup.Deref(c.schemes[name])
		s, _ := v.(map[string]any)
		if err != nil || s == nil {
			return nil, nil, nil, fmt.Sprintf("security scheme %q is not defined", name)
		}
		key := c.credPrefix + "_" + upperSnake(name)
		typ := str(s["type"])
		var scopes []string
		for _, sc := range asList(req[name]) {
			scopes = append(scopes, str(sc))
		}
		next := ""
		switch {
		case typ == "apiKey":
			in := str(s["in"])
			if in != plugins.InHeader && in != plugins.InQuery && in != plugins.InCookie || str(s["name"]) == "" {
				return nil, nil, nil, fmt.Sprintf("apiKey scheme %q: location %q or name %q unusable", name, in, str(s["name"]))
			}
			out.Mapping = append(out.Mapping, plugins.AuthMapping{Source: key, Target: str(s["name"]), Location: in})
			continue
		case typ == "http" && strings.EqualFold(str(s["scheme"]), "bearer"):
			out.Type, out.Token, next = plugins.AuthBearer, key, name
		case typ == "http" && strings.EqualFold(str(s["scheme"]), "basic"):
			out.Type, out.Username, out.Password, next = plugins.AuthBasic, key+"_USERNAME", key+"_PASSWORD", name
		case typ == "oauth2":
			flows, _ := s["flows"].(map[string]any)
			flow, _ := flows["clientCredentials"].(map[string]any)
			if code, _ := flows["authorizationCode"].(map[string]any); flow == nil && code != nil {
				// The user signs in at the provider (issue 34): the client
				// credentials grant, when the scheme offers it too, needs
				// nobody and stays the choice.
				prov, why := c.provider(name, code)
				if prov == nil {
					return nil, &plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{
						Grant: plugins.GrantAccessToken, AccessToken: key + "_ACCESS_TOKEN"}}, nil, why
				}
				out.Type, next = plugins.AuthOAuth2, name
				out.OAuth2 = &plugins.OAuth2{Grant: plugins.GrantAuthorizationCode, Provider: prov.Name, Scopes: scopes}
				provider = prov
				break
			}
			tokenURL := c.absolute(str(flow["tokenUrl"]))
			if flow == nil || tokenURL == "" {
				tok := &plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{
					Grant: plugins.GrantAccessToken, AccessToken: key + "_ACCESS_TOKEN"}}
				if flow == nil {
					return nil, tok, nil, fmt.Sprintf("oauth2 scheme %q has no clientCredentials flow", name)
				}
				return nil, tok, nil, fmt.Sprintf("oauth2 scheme %q: tokenUrl %q is not an absolute URL", name, str(flow["tokenUrl"]))
			}
			out.Type, next = plugins.AuthOAuth2, name
			out.OAuth2 = &plugins.OAuth2{Grant: plugins.GrantClientCredentials, TokenURL: tokenURL,
				ClientID: key + "_CLIENT_ID", ClientSecret: key + "_CLIENT_SECRET", Scopes: scopes}
		case typ == "openIdConnect":
			return nil, &plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{
				Grant: plugins.GrantAccessToken, AccessToken: key + "_ACCESS_TOKEN"}}, nil, fmt.Sprintf("openIdConnect scheme %q", name)
		case typ == "http":
			return nil, nil, nil, fmt.Sprintf("http scheme %q (%s)", name, str(s["scheme"]))
		default:
			return nil, nil, nil, fmt.Sprintf("%s scheme %q", typ, name)
		}
		if primary != "" {
			return nil, nil, nil, fmt.Sprintf("schemes %q and %q both set the Authorization", primary, next)
		}
		primary = next
	}
	return out, nil, provider, ""
}

// absolute resolves a URL of the document (a token URL) against the source
// URL; "" when it stays relative.
func (c *converter) absolute(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return ""
	}
	if !u.IsAbs() && c.source != nil {
		u = c.source.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return ""
	}
	return u.String()
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// provider is the OAuth provider of the authorizationCode flow of scheme
// name, or why there is none: both URLs must be absolute (relative ones
// resolved against the source URL).
func (c *converter) provider(name string, flow map[string]any) (*Provider, string) {
	p := &Provider{
		Name:             providerName(c.credPrefix + "_" + upperSnake(name)),
		AuthorizationURL: c.absolute(str(flow["authorizationUrl"])),
		TokenURL:         c.absolute(str(flow["tokenUrl"])),
		RefreshURL:       c.absolute(str(flow["refreshUrl"])),
	}
	switch {
	case p.AuthorizationURL == "":
		return nil, fmt.Sprintf("oauth2 scheme %q: authorizationCode authorizationUrl %q is not an absolute URL", name, str(flow["authorizationUrl"]))
	case p.TokenURL == "":
		return nil, fmt.Sprintf("oauth2 scheme %q: authorizationCode tokenUrl %q is not an absolute URL", name, str(flow["tokenUrl"]))
	}
	scopes, _ := flow["scopes"].(map[string]any)
	p.Scopes = sortedKeys(scopes)
	return p, ""
}

// providerName is an upper snake name as a provider's: lower case, at
// most 64 characters (plugins.ProviderNamePattern).
func providerName(s string) string {
	s = strings.ToLower(s)
	if len(s) > 64 {
		s = strings.TrimRight(s[:64], "_")
	}
	return s
}
