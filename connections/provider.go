package connections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// Provider is an authorization server users connect their accounts at,
// as the administrator registers it (POST /v1/oauth/providers). Its
// client secret belongs to no user: it is stored encrypted in
// sys_ai_oauth_provider.client_secret in the vault's format (auth/vault.go,
// AAD "0:oauth_provider/<name>/client_secret") under the master key's id,
// re-encrypted by `cred rotate`, and never returned: ClientSecret is
// write-only, ClientSecretSet says whether one is stored.
type Provider struct {
	Name             string `json:"name"`
	AuthorizationURL string `json:"authorization_url"`
	TokenURL         string `json:"token_url"`
	RevocationURL    string `json:"revocation_url,omitempty"`
	Issuer           string `json:"issuer,omitempty"`
	// IssSupported is the provider's metadata's
	// authorization_response_iss_parameter_supported (RFC 8414, RFC 9207):
	// true, an authorization response without iss is refused.
	IssSupported    bool     `json:"authorization_response_iss_parameter_supported,omitempty"`
	Scopes          []string `json:"scopes"`
	ClientID        string   `json:"client_id"`
	ClientSecret    string   `json:"client_secret,omitempty"`
	ClientSecretSet bool     `json:"client_secret_set"`
	// PKCE sends an S256 code challenge (RFC 7636); true unless set false.
	PKCE bool `json:"pkce"`
	// ExtraParams are added to the authorization request (e.g.
	// access_type=offline, prompt=consent).
	ExtraParams map[string]string `json:"extra_params,omitempty"`
	// Enabled false keeps users from connecting (a provider an import
	// created before its client was registered); true unless set false.
	Enabled bool `json:"enabled"`
}

// UnmarshalJSON decodes a provider with pkce and enabled true unless the
// document sets them.
func (p *Provider) UnmarshalJSON(b []byte) error {
	type plain Provider
	v := plain{PKCE: true, Enabled: true}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = Provider(v)
	return nil
}

// FieldError is a provider field that is not valid.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// InvalidProviderError lists what is wrong with a provider.
type InvalidProviderError struct {
	Errors []FieldError
}

func (e *InvalidProviderError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		msgs[i] = fe.Field + ": " + fe.Message
	}
	return "invalid provider: " + strings.Join(msgs, "; ")
}

// reservedParams are the authorization request's own parameters, which
// extra_params may not set.
var reservedParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method"}

// Validate checks p, naming each field that is wrong and what was
// expected.
func (p *Provider) Validate() error {
	var errs []FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{field, fmt.Sprintf(format, args...)})
	}
	if !plugins.ProviderNamePattern.MatchString(p.Name) {
		add("name", "%q is not a provider name (1 to 64 letters, digits, '_', '.' or '-')", p.Name)
	}
	checkURL := func(field, v string, required bool) {
		if v == "" {
			if required {
				add(field, "required: an absolute http or https URL")
			}
			return
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" || u.User != nil {
			add(field, "%q must be an absolute http or https URL, without user info or fragment", redact.URL(v))
		}
	}
	checkURL("authorization_url", p.AuthorizationURL, true)
	checkURL("token_url", p.TokenURL, true)
	checkURL("revocation_url", p.RevocationURL, false)
	checkURL("issuer", p.Issuer, false)
	if p.IssSupported && p.Issuer == "" {
		add("authorization_response_iss_parameter_supported", "true needs the provider's issuer: the iss of its answers must be it")
	}
	for i, s := range p.Scopes {
		if !validScope(s) {
			add(fmt.Sprintf("scopes[%d]", i), "%q is not a scope (printable ASCII without spaces, quotes or backslashes)", s)
		}
	}
	if strings.ContainsAny(p.ClientID, "\r\n\x00") {
		add("client_id", "must not contain CR, LF or NUL")
	}
	if strings.ContainsAny(p.ClientSecret, "\r\n\x00") {
		add("client_secret", "must not contain CR, LF or NUL")
	}
	if p.Enabled && p.ClientID == "" {
		add("client_id", "required for an enabled provider: the client id registered at the provider (register the client, or set enabled false)")
	}
	for k := range p.ExtraParams {
		if slices.Contains(reservedParams, k) || k == "" {
			add("extra_params."+k, "may not be set: the engine writes %s itself", strings.Join(reservedParams, ", "))
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
		return &InvalidProviderError{Errors: errs}
	}
	return nil
}

// validScope is RFC 6749 §3.3's scope-token: %x21 / %x23-5B / %x5D-7E.
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < 0x21 || c == '"' || c == '\\' || c > 0x7e {
			return false
		}
	}
	return true
}

// secretKey is the vault key (AAD "0:<key>") of a provider's client
// secret.
func secretKey(name string) string { return "oauth_provider/" + name + "/client_secret" }

// ErrNoProvider is wrapped by the errors about a provider that is not
// registered.
var ErrNoProvider = errors.New("no such OAuth provider")

// ErrProviderExists is wrapped by CreateProvider's error for a name
// already registered.
var ErrProviderExists = errors.New("an OAuth provider of that name is registered already")

// PutProvider registers p, or replaces the provider of its name (an
// empty client_secret keeps the stored one), and returns it as stored,
// without its secret.
func (s *Service) PutProvider(ctx context.Context, p Provider) (Provider, error) {
	row, err := s.providerRowOf(p)
	if err != nil {
		return Provider{}, err
	}
	if err := s.Store.PutOAuthProvider(ctx, row); err != nil {
		return Provider{}, err
	}
	return providerOf(row)
}

// CreateProvider registers p under a name not taken yet (an import
// creating a provider, disabled until its client is registered); an
// error wrapping ErrProviderExists otherwise.
func (s *Service) CreateProvider(ctx context.Context, p Provider) (Provider, error) {
	row, err := s.providerRowOf(p)
	if err != nil {
		return Provider{}, err
	}
	err = s.Store.CreateOAuthProvider(ctx, row)
	if errors.Is(err, store.ErrDuplicate) {
		return Provider{}, fmt.Errorf("%w: %q", ErrProviderExists, p.Name)
	}
	if err != nil {
		return Provider{}, err
	}
	return providerOf(row)
}

// providerRowOf validates p and turns it into its row, the secret
// encrypted.
func (s *Service) providerRowOf(p Provider) (*store.OAuthProvider, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	row := &store.OAuthProvider{
		Name: p.Name, AuthorizationURL: p.AuthorizationURL, TokenURL: p.TokenURL, RevocationURL: p.RevocationURL,
		Issuer: p.Issuer, IssSupported: flag(p.IssSupported), ClientID: p.ClientID, PKCE: flag(p.PKCE), Status: store.StatusDisabled,
	}
	if p.Enabled {
		row.Status = store.StatusEnabled
	}
	var err error
	if row.Scopes, err = json.Marshal(nonNil(p.Scopes)); err != nil {
		return nil, err
	}
	if len(p.ExtraParams) > 0 {
		if row.ExtraParams, err = json.Marshal(p.ExtraParams); err != nil {
			return nil, err
		}
	}
	if p.ClientSecret != "" {
		if row.ClientSecret, row.KeyID, err = s.Keys.Encrypt(0, secretKey(p.Name), p.ClientSecret); err != nil {
			return nil, fmt.Errorf("provider %s: client_secret: %w", p.Name, err)
		}
	}
	return row, nil
}

// Providers returns every registered provider, without secrets.
func (s *Service) Providers(ctx context.Context) ([]Provider, error) {
	rows, err := s.Store.ListOAuthProviders(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Provider, 0, len(rows))
	for i := range rows {
		p, err := providerOf(&rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Provider returns the provider called name, without its secret; an
// error wrapping ErrNoProvider when there is none.
func (s *Service) Provider(ctx context.Context, name string) (Provider, error) {
	row, err := s.providerRow(ctx, name)
	if err != nil {
		return Provider{}, err
	}
	return providerOf(row)
}

func (s *Service) providerRow(ctx context.Context, name string) (*store.OAuthProvider, error) {
	row, err := s.Store.GetOAuthProvider(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrNoProvider, name)
	}
	return row, err
}

// DeleteProvider removes the provider called name and every connection
// to it, then revokes those connections' tokens at the provider (as
// Disconnect does, a few at a time; a failure is logged, the deletion
// stands); an error wrapping ErrNoProvider when there is none.
func (s *Service) DeleteProvider(ctx context.Context, name string) error {
	p, err := s.providerRow(ctx, name)
	if err != nil {
		return err
	}
	conns, err := s.Store.ListProviderConnections(ctx, name)
	if err != nil {
		return err
	}
	err = s.Store.DeleteOAuthProvider(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %q", ErrNoProvider, name)
	}
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, revokeParallel)
	for i := range conns {
		c := &conns[i]
		access, refresh, err := s.connectionTokens(c)
		if err != nil {
			s.logger().WarnContext(ctx, "connection tokens not revoked: they cannot be decrypted", "provider", name, "user", c.UserID, "err", err)
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			s.revoke(ctx, p, access, refresh)
		})
	}
	wg.Wait()
	return nil
}

// revokeParallel bounds the revocation requests a provider's deletion
// has in flight.
const revokeParallel = 8

// MatchProvider returns the registered provider whose authorization and
// token URLs are these (an OpenAPI import's authorizationCode flow), if
// any. URLs compare after parsing: scheme and host in any case, a
// trailing slash of the path aside.
func (s *Service) MatchProvider(ctx context.Context, authorizationURL, tokenURL string) (Provider, bool, error) {
	ps, err := s.Providers(ctx)
	if err != nil {
		return Provider{}, false, err
	}
	for _, p := range ps {
		if sameURL(p.AuthorizationURL, authorizationURL) && sameURL(p.TokenURL, tokenURL) {
			return p, true, nil
		}
	}
	return Provider{}, false, nil
}

func sameURL(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimSuffix(ua.Path, "/") == strings.TrimSuffix(ub.Path, "/") && ua.RawQuery == ub.RawQuery
}

func providerOf(row *store.OAuthProvider) (Provider, error) {
	p := Provider{
		Name: row.Name, AuthorizationURL: row.AuthorizationURL, TokenURL: row.TokenURL, RevocationURL: row.RevocationURL,
		Issuer: row.Issuer, IssSupported: row.IssSupported == "1", ClientID: row.ClientID, ClientSecretSet: row.ClientSecret != "",
		PKCE: row.PKCE != "0", Enabled: row.Status == store.StatusEnabled, Scopes: []string{},
	}
	if len(row.Scopes) > 0 {
		if err := json.Unmarshal(row.Scopes, &p.Scopes); err != nil {
			return Provider{}, fmt.Errorf("provider %s: stored scopes: %w", row.Name, err)
		}
	}
	if len(row.ExtraParams) > 0 {
		if err := json.Unmarshal(row.ExtraParams, &p.ExtraParams); err != nil {
			return Provider{}, fmt.Errorf("provider %s: stored extra_params: %w", row.Name, err)
		}
	}
	return p, nil
}

// clientSecret decrypts the provider's client secret ("" when none is
// stored: a public client).
func (s *Service) clientSecret(row *store.OAuthProvider) (string, error) {
	if row.ClientSecret == "" {
		return "", nil
	}
	v, err := s.Keys.Decrypt(0, secretKey(row.Name), row.ClientSecret)
	if err != nil {
		return "", fmt.Errorf("provider %s: client secret: %w", row.Name, err)
	}
	return v, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
