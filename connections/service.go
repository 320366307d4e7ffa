// Package connections lets users connect their own accounts at OAuth 2.0
// providers (authorization code with PKCE, RFC 6749, RFC 7636, RFC 9700)
// and calls APIs with those accounts blind: the administrator registers
// providers; a user's browser goes through /oauth/start/{handle}, the
// provider and /oauth/callback, and confirms; the engine then keeps the
// user's tokens encrypted, sends the access token only to the origins of
// enabled catalog plugins using the provider, and refreshes it itself,
// once across replicas (a claim in the row taken before the provider is
// contacted).
//
// Every flow's state lives in the database (sys_ai_oauth_flow), so that
// its start, callback and confirmation may each land on another replica;
// handles, states, cookie bindings and CSRF tokens are stored as SHA-256
// only, the PKCE verifier and the tokens encrypted with the vault's key.
package connections

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/store"
)

// Defaults of the Service's timings.
const (
	// FlowTTL bounds a flow: its start URL is single use and expires in
	// it, and so do its state and confirmation.
	FlowTTL = 10 * time.Minute
	// DefaultClaimTTL is how long a refresh claim holds: past it, a claim
	// whose owner died is taken to have lost the provider's answer.
	DefaultClaimTTL = time.Minute
	// DefaultRefreshTimeout bounds one token request; well below the
	// claim, so that a live owner never outlasts its claim.
	DefaultRefreshTimeout = 20 * time.Second
	// DefaultRefreshSkew is how long before its expiry a token is
	// refreshed.
	DefaultRefreshSkew = time.Minute
	// DefaultRefreshFloor is the least time between two refreshes of one
	// connection that a 401 may cause: an API answering 401 for another
	// reason does not cause a refresh storm.
	DefaultRefreshFloor = 30 * time.Second
	// DefaultWait bounds how long a call waits for a refresh another
	// caller or replica is making.
	DefaultWait = 25 * time.Second
)

// ErrNoBrowserURL refuses connections while BLINDEXEC_BROWSER_URL is not
// set: the callback is never derived from a request's Host.
var ErrNoBrowserURL = errors.New("BLINDEXEC_BROWSER_URL is not set: users cannot connect accounts until it names the address browsers reach the engine at (the provider redirects to <BLINDEXEC_BROWSER_URL>/oauth/callback)")

// Catalog tells where a provider's tokens may go; *auth.Catalog
// implements it.
type Catalog interface {
	ServesProvider(ctx context.Context, provider, origin string) (bool, error)
}

// Service keeps providers, flows and connections. Its fields are
// settings: set them (or use New) before the first call.
type Service struct {
	Store *store.Store
	Keys  *auth.Keyring
	// Client sends token and revocation requests: the egress-guarded
	// client (egress.NewClient), as for every plugin call.
	Client *http.Client
	// BrowserURL is BLINDEXEC_BROWSER_URL: the address people's browsers
	// reach the engine at; "" refuses connections (ErrNoBrowserURL).
	BrowserURL string
	// Catalog decides where tokens may go; nil: nowhere.
	Catalog Catalog
	Logger  *slog.Logger
	// Replica names this process in refresh claims (random by default).
	Replica string

	ClaimTTL, RefreshTimeout, RefreshSkew, RefreshFloor, Wait time.Duration
	// Poll is how often a call waiting for another replica's refresh
	// rereads the row (200 ms by default).
	Poll time.Duration

	mu       sync.Mutex
	inflight map[int64]*flight // connection id → this process's refresh of it
}

// New returns a Service with the default timings. browserURL may be ""
// (connections refused until set).
func New(st *store.Store, keys *auth.Keyring, client *http.Client, browserURL string) *Service {
	return &Service{Store: st, Keys: keys, Client: client, BrowserURL: strings.TrimRight(browserURL, "/")}
}

// CallbackURL is <BLINDEXEC_BROWSER_URL>/oauth/callback, the redirect URI
// to register at every provider (an exact match); ErrNoBrowserURL while
// the setting is empty.
func (s *Service) CallbackURL() (string, error) {
	if s.BrowserURL == "" {
		return "", ErrNoBrowserURL
	}
	return strings.TrimRight(s.BrowserURL, "/") + CallbackPath, nil
}

func (s *Service) logger() *slog.Logger { return cmp.Or(s.Logger, slog.Default()) }

func (s *Service) replica() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Replica == "" {
		s.Replica = "r-" + randomHex(8)
	}
	return s.Replica
}

// Connection is a user's connection as the API lists it: never a token.
type Connection struct {
	UserID   int64      `json:"user_id"`
	Provider string     `json:"provider"`
	Scopes   []string   `json:"scopes"`
	Expires  *time.Time `json:"expires_at,omitempty"`
	// State is "connected" or "broken" (the user must connect again;
	// Reason says why).
	State       string    `json:"state"`
	Reason      string    `json:"reason,omitempty"`
	Account     string    `json:"account,omitempty"`
	ConnectedAt time.Time `json:"connected_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// List returns the connections of userID, or of every user when userID
// is 0 (the administrator's view).
func (s *Service) List(ctx context.Context, userID int64) ([]Connection, error) {
	rows, err := s.Store.ListOAuthConnections(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]Connection, 0, len(rows))
	for i := range rows {
		out = append(out, connectionOf(&rows[i]))
	}
	return out, nil
}

func connectionOf(r *store.OAuthConnection) Connection {
	c := Connection{UserID: r.UserID, Provider: r.Provider, Scopes: scopesOf(r.Scopes), Expires: r.ExpiresAt,
		State: r.State, Reason: r.BrokenReason, Account: r.Account, ConnectedAt: r.ConnectedAt, UpdatedAt: r.UpdateTime}
	return c
}

func scopesOf(j store.JSON) []string {
	out := []string{}
	if len(j) > 0 {
		_ = json.Unmarshal(j, &out) // written by this package: a list of strings
	}
	return out
}

// ErrNotConnected is wrapped by Disconnect's error for a user without a
// connection to the provider.
var ErrNotConnected = errors.New("not connected")

// Disconnect removes the user's connection to provider, revoking its
// tokens at the provider first when it has a revocation URL (RFC 7009;
// a failed revocation is logged and the connection removed all the
// same: the user asked to be disconnected).
func (s *Service) Disconnect(ctx context.Context, userID int64, provider string) error {
	row, err := s.Store.GetOAuthConnection(ctx, userID, provider)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("user %d and provider %s: %w", userID, provider, ErrNotConnected)
	}
	if err != nil {
		return err
	}
	if p, err := s.providerRow(ctx, provider); err == nil {
		access, refresh, derr := s.connectionTokens(row)
		if derr != nil {
			s.logger().WarnContext(ctx, "connection tokens not revoked: they cannot be decrypted", "provider", provider, "user", userID, "err", derr)
		} else {
			s.revoke(ctx, p, access, refresh)
		}
	}
	err = s.Store.DeleteOAuthConnection(ctx, userID, provider)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("user %d and provider %s: %w", userID, provider, ErrNotConnected)
	}
	return err
}

// RequiredError says a call needs the user to connect (or reconnect) to
// Provider, or to grant it more scopes: engine.CodeConnectionRequired.
// It names the provider and scopes, never a token.
type RequiredError struct {
	Provider string
	// Scopes are those the tool needs; Missing those of them the
	// connection lacks (all of them when there is no connection).
	Scopes, Missing []string
	Reason          string
}

func (e *RequiredError) Error() string {
	msg := fmt.Sprintf("the user must connect their %s account: %s", e.Provider, e.Reason)
	if len(e.Missing) > 0 {
		msg += fmt.Sprintf(" (scopes missing: %s)", strings.Join(e.Missing, " "))
	}
	return msg
}

// Connected returns nil when the user has a working connection to
// provider granting every scope of scopes, or a *RequiredError saying
// what is missing; another error when it cannot tell.
func (s *Service) Connected(ctx context.Context, userID int64, provider string, scopes []string) error {
	_, err := s.usable(ctx, userID, provider, scopes)
	return err
}

// unread is err of a database step a call's token needed, saying so
// when the database did not answer within store.QueryTimeout.
func unread(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("the connection cannot be read or written at the moment (the database did not answer within %v); nothing was sent: %w", store.QueryTimeout, err)
	}
	return err
}

// usable reads the user's connection and checks it may serve scopes.
func (s *Service) usable(ctx context.Context, userID int64, provider string, scopes []string) (*store.OAuthConnection, error) {
	required := func(reason string, missing []string) error {
		return &RequiredError{Provider: provider, Scopes: nonNil(scopes), Missing: nonNil(missing), Reason: reason}
	}
	if userID == 0 {
		return nil, required("the call names no user, and connections are per user", scopes)
	}
	// Bounded: a database that stops answering would hold the call for
	// its whole timeout, then have it read as the API's.
	rctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	row, err := s.Store.GetOAuthConnection(rctx, userID, provider)
	cancel()
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, required("no connection", scopes)
	case err != nil:
		return nil, unread(ctx, err)
	case row.State != store.ConnectionConnected:
		return nil, required("the connection is broken: "+row.BrokenReason, scopes)
	}
	var missing []string
	granted := scopesOf(row.Scopes)
	for _, sc := range scopes {
		if !slices.Contains(granted, sc) {
			missing = append(missing, sc)
		}
	}
	if len(missing) > 0 {
		return nil, required("the connection lacks scopes the tool needs", missing)
	}
	return row, nil
}

func accessKey(provider string) string  { return "oauth/" + provider + "/access_token" }
func refreshKey(provider string) string { return "oauth/" + provider + "/refresh_token" }

// connectionTokens decrypts a connection's tokens (refresh "" when none).
func (s *Service) connectionTokens(row *store.OAuthConnection) (access, refresh string, err error) {
	if access, err = s.Keys.Decrypt(row.UserID, accessKey(row.Provider), row.AccessToken); err != nil {
		return "", "", fmt.Errorf("connection of user %d to %s: access token: %w", row.UserID, row.Provider, err)
	}
	if row.RefreshToken != "" {
		if refresh, err = s.Keys.Decrypt(row.UserID, refreshKey(row.Provider), row.RefreshToken); err != nil {
			return "", "", fmt.Errorf("connection of user %d to %s: refresh token: %w", row.UserID, row.Provider, err)
		}
	}
	return access, refresh, nil
}

// sealTokens encrypts a user's tokens for provider; kid is the key id.
func (s *Service) sealTokens(userID int64, provider, access, refresh string) (sa, sr, kid string, err error) {
	if sa, kid, err = s.Keys.Encrypt(userID, accessKey(provider), access); err != nil {
		return "", "", "", err
	}
	if refresh != "" {
		if sr, _, err = s.Keys.Encrypt(userID, refreshKey(provider), refresh); err != nil {
			return "", "", "", err
		}
	}
	return sa, sr, kid, nil
}

// Rotate re-encrypts under the master key every provider secret and
// connection token stored under another key (`cred rotate`), and returns
// how many rows it re-encrypted. Flows in progress (ten minutes at most)
// are left to expire.
func (s *Service) Rotate(ctx context.Context) (int, error) {
	master := s.Keys.MasterKeyID()
	if master == "" {
		return 0, auth.ErrNoMasterKey
	}
	n := 0
	err := s.Store.EachOAuthSecret(ctx, func(p *store.OAuthProvider) error {
		if p.ClientSecret == "" || p.KeyID == master {
			return nil
		}
		plain, err := s.clientSecret(p)
		if err != nil {
			return err
		}
		sealed, kid, err := s.Keys.Encrypt(0, secretKey(p.Name), plain)
		if err != nil {
			return err
		}
		if err := s.Store.UpdateOAuthProviderSecret(ctx, p.ID, p.ClientSecret, sealed, kid); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		n++
		return nil
	}, func(c *store.OAuthConnection) error {
		if c.KeyID == master {
			return nil
		}
		access, refresh, err := s.connectionTokens(c)
		if err != nil {
			return err
		}
		sa, sr, kid, err := s.sealTokens(c.UserID, c.Provider, access, refresh)
		if err != nil {
			return err
		}
		err = s.Store.UpdateOAuthConnectionSecrets(ctx, c.ID, c.Version, sa, sr, kid)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil // refreshed meanwhile: written under the master key already
		case err != nil:
			return err
		}
		n++
		return nil
	})
	return n, err
}

// revoke revokes tokens at the provider's revocation URL (RFC 7009), the
// refresh token first (revoking it ends the grant at most providers);
// failures are logged, never with a token.
func (s *Service) revoke(ctx context.Context, p *store.OAuthProvider, access, refresh string) {
	if p.RevocationURL == "" {
		return
	}
	secret, err := s.clientSecret(p)
	if err != nil {
		s.logger().WarnContext(ctx, "tokens not revoked", "provider", p.Name, "err", err)
		return
	}
	for _, t := range []struct{ token, hint string }{{refresh, "refresh_token"}, {access, "access_token"}} {
		if t.token == "" {
			continue
		}
		if err := s.revokeOne(ctx, p, secret, t.token, t.hint); err != nil {
			s.logger().WarnContext(ctx, "token not revoked at the provider", "provider", p.Name, "hint", t.hint,
				"err", auth.NewMasker(t.token, secret).Error(err))
		}
	}
}

func (s *Service) revokeOne(ctx context.Context, p *store.OAuthProvider, secret, token, hint string) error {
	ctx, cancel := s.providerContext(context.WithoutCancel(ctx))
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	if secret == "" {
		form.Set("client_id", p.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.RevocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		return revokeError(p, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(p.ClientID), url.QueryEscape(secret))
	}
	resp, err := s.providerClient().Do(req)
	if err != nil {
		return revokeError(p, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return revokeError(p, fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	return nil
}

// revokeError says a revocation at p failed, quoting its revocation URL
// without user info (a row written by SQL may hold it; leftovers80):
// Go's *url.Error, which quotes the URL again with its user, is left for
// the error it wraps.
func revokeError(p *store.OAuthProvider, err error) error {
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("revoke at %s: %w", redact.URL(p.RevocationURL), err)
}

// providerClient is Client refusing to follow redirects: a token or
// revocation endpoint answering 307 or 308 would have the code, the PKCE
// verifier or a token posted again to wherever it points, and they go
// only to the provider's registered URLs.
func (s *Service) providerClient() *http.Client {
	c := http.Client{}
	if s.Client != nil {
		c = *s.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// providerContext is ctx for a request to the provider's token or
// revocation endpoint: bounded by the refresh timeout, sending through
// providerClient (golang.org/x/oauth2 reads it from the context), and
// marked as carrying credentials (the client secret, the code, a token),
// which the guarded transport keeps off plain http
// (egress.PlaintextError).
func (s *Service) providerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = context.WithValue(egress.WithCredentials(ctx, nil), oauth2.HTTPClient, s.providerClient())
	return context.WithTimeout(ctx, s.refreshTimeout())
}

func (s *Service) refreshTimeout() time.Duration {
	return cmp.Or(s.RefreshTimeout, DefaultRefreshTimeout)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
