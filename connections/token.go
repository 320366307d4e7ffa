package connections

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/store"
)

// ErrOriginNotAllowed is wrapped by the error refusing a connection's
// token to an origin no enabled catalog plugin using the provider calls.
var ErrOriginNotAllowed = errors.New("a connection's token goes only to the origins of enabled catalog plugins using its provider")

// Token is a connection's access token as a call sends it. Value is a
// secret: mask it wherever the call's output goes.
type Token struct {
	Value   string
	version int64 // the row's version it was read at
}

// Token returns the user's access token at provider for a request to
// origin (scheme://host[:port]) by a tool needing scopes, refreshing it
// first when it expires soon. Refusals: an error wrapping
// ErrOriginNotAllowed, or a *RequiredError when the user has no working
// connection granting scopes.
func (s *Service) Token(ctx context.Context, userID int64, provider string, scopes []string, origin string) (Token, error) {
	if err := s.allowed(ctx, provider, origin); err != nil {
		return Token{}, err
	}
	return s.token(ctx, userID, provider, scopes, false)
}

// Rejected is called when the API answered 401 to tok: it returns a
// token to retry with and true — the one another caller or replica
// refreshed meanwhile, or a fresh one — or false when the connection was
// refreshed less than the floor ago (the 401 has another cause; no
// refresh storm).
func (s *Service) Rejected(ctx context.Context, userID int64, provider string, scopes []string, origin string, tok Token) (Token, bool, error) {
	if err := s.allowed(ctx, provider, origin); err != nil {
		return Token{}, false, err
	}
	row, err := s.usable(ctx, userID, provider, scopes)
	if err != nil {
		return Token{}, false, err
	}
	if row.Version != tok.version || row.RefreshingUntil != nil {
		t, err := s.token(ctx, userID, provider, scopes, false)
		return t, err == nil && t.Value != tok.Value, err
	}
	if row.RefreshToken == "" || time.Since(issued(row)) < cmp.Or(s.RefreshFloor, DefaultRefreshFloor) {
		return tok, false, nil
	}
	t, err := s.token(ctx, userID, provider, scopes, true)
	return t, err == nil, err
}

// allowed checks that origin is one of an enabled catalog plugin using
// provider.
func (s *Service) allowed(ctx context.Context, provider, origin string) error {
	if s.Catalog == nil {
		return fmt.Errorf("%w: no catalog is configured", ErrOriginNotAllowed)
	}
	ok, err := s.Catalog.ServesProvider(ctx, provider, strings.ToLower(origin))
	if err != nil {
		return fmt.Errorf("check where the %s token may go: %w", provider, err)
	}
	if !ok {
		return fmt.Errorf("%w: no enabled catalog plugin using %s calls %s", ErrOriginNotAllowed, provider, origin)
	}
	return nil
}

// errRetry sends token back to reread the row: another replica claimed
// it first.
var errRetry = errors.New("the connection moved on: read it again")

// token reads the connection and returns its access token, refreshing
// first when it expires within the skew (or force), and waiting (up to
// Wait) while another replica refreshes it.
func (s *Service) token(ctx context.Context, userID int64, provider string, scopes []string, force bool) (Token, error) {
	deadline := time.Now().Add(cmp.Or(s.Wait, DefaultWait))
	for {
		row, err := s.usable(ctx, userID, provider, scopes)
		if err != nil {
			return Token{}, err
		}
		if row.RefreshingUntil != nil {
			if !time.Now().Before(*row.RefreshingUntil) {
				// Its owner stopped after it may have spent the refresh
				// token: the answer is lost, and the old refresh token must
				// not be sent again (a provider detecting reuse would
				// revoke the whole grant).
				return Token{}, s.breakRow(ctx, row, "a refresh's answer was lost (the replica refreshing it stopped): connect again")
			}
			if err := s.pause(ctx, deadline); err != nil {
				return Token{}, fmt.Errorf("waiting for another replica to refresh the %s token: %w", provider, err)
			}
			continue
		}
		if force || s.expiring(row) {
			if row.RefreshToken == "" {
				if row.ExpiresAt != nil && time.Now().After(*row.ExpiresAt) {
					return Token{}, &RequiredError{Provider: provider, Scopes: nonNil(scopes), Missing: []string{},
						Reason: "the access token expired and the provider gave no refresh token"}
				}
			} else {
				t, err := s.refresh(ctx, row)
				if errors.Is(err, errRetry) {
					force = false // the row moved: whoever moved it refreshed
					continue
				}
				return t, err
			}
		}
		access, _, err := s.connectionTokens(row)
		if err != nil {
			return Token{}, err
		}
		return Token{Value: access, version: row.Version}, nil
	}
}

// expiring reports whether the row's access token expires within the
// skew: the configured one, or a quarter of the token's life when that
// is shorter.
func (s *Service) expiring(row *store.OAuthConnection) bool {
	if row.ExpiresAt == nil {
		return false
	}
	skew := min(cmp.Or(s.RefreshSkew, DefaultRefreshSkew), row.ExpiresAt.Sub(issued(row))/4)
	return !time.Now().Before(row.ExpiresAt.Add(-skew))
}

// issued is when the row's tokens were obtained: its last refresh, else
// the connection (a reconnect clears refreshed_at).
func issued(row *store.OAuthConnection) time.Time {
	if row.RefreshedAt != nil && row.RefreshedAt.After(row.ConnectedAt) {
		return *row.RefreshedAt
	}
	return row.ConnectedAt
}

func (s *Service) pause(ctx context.Context, deadline time.Time) error {
	if !time.Now().Before(deadline) {
		return errors.New("gave up waiting")
	}
	t := time.NewTimer(min(cmp.Or(s.Poll, 200*time.Millisecond), time.Until(deadline)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// breakRow marks the row broken (if still at its version) and returns the
// *RequiredError a call answers.
func (s *Service) breakRow(ctx context.Context, row *store.OAuthConnection, reason string) error {
	// Bounded, as every database step of a refresh: the flight every
	// caller of the connection waits on must end. Not written, the claim
	// runs out and the next reader marks the connection broken.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.QueryTimeout)
	defer cancel()
	if err := s.Store.BreakOAuthConnection(bctx, row.ID, row.Version, reason); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.logger().WarnContext(ctx, "connection not marked broken", "provider", row.Provider, "user", row.UserID, "err", err)
	}
	s.logger().InfoContext(ctx, "connection broken", "provider", row.Provider, "user", row.UserID, "reason", reason)
	return &RequiredError{Provider: row.Provider, Scopes: []string{}, Missing: []string{}, Reason: reason}
}

// flight is this process's refresh of one connection: callers of one
// process share it (single-flight within the process); the claim in the
// row makes it single across replicas.
type flight struct {
	done  chan struct{}
	token Token
	err   error
}

// refresh refreshes row's tokens once for every caller of this process,
// each waiting only as long as its own context allows. The refresh itself
// runs detached, so that no caller's cancellation loses its answer.
func (s *Service) refresh(ctx context.Context, row *store.OAuthConnection) (Token, error) {
	s.mu.Lock()
	f := s.inflight[row.ID]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		if s.inflight == nil {
			s.inflight = map[int64]*flight{}
		}
		s.inflight[row.ID] = f
		go func() {
			defer func() {
				s.mu.Lock()
				delete(s.inflight, row.ID)
				s.mu.Unlock()
				close(f.done)
			}()
			// Bounded by the claim's life: every caller of this row
			// waits on the flight, and past it the claim is void anyway.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(s.ClaimTTL, DefaultClaimTTL))
			defer cancel()
			f.token, f.err = s.refreshOnce(fctx, row)
		}()
	}
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.token, f.err
	case <-ctx.Done():
		return Token{}, context.Cause(ctx)
	}
}

// refreshOnce claims the row at the version read, then — and only then —
// asks the provider for new tokens with the refresh token, writes them,
// and returns the new access token: a token is used only once written.
func (s *Service) refreshOnce(ctx context.Context, row *store.OAuthConnection) (Token, error) {
	owner := s.replica() + "/" + randomHex(4)
	cctx, cancel := context.WithTimeout(ctx, store.QueryTimeout) // nothing sent yet: a database not answering fails it
	claimed, err := s.Store.ClaimOAuthRefresh(cctx, row.ID, row.Version, owner, time.Now().Add(cmp.Or(s.ClaimTTL, DefaultClaimTTL)))
	cancel()
	if err != nil {
		return Token{}, unread(ctx, err)
	}
	if !claimed {
		return Token{}, errRetry
	}
	version := row.Version + 1
	release := func(cause error) error {
		rctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
		defer cancel()
		if err := s.Store.ReleaseOAuthRefresh(rctx, row.ID, version, owner); err != nil {
			s.logger().WarnContext(ctx, "refresh claim not released; it expires by itself", "provider", row.Provider, "user", row.UserID, "err", err)
		}
		return cause
	}
	pctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	p, err := s.providerRow(pctx, row.Provider)
	cancel()
	if err != nil {
		return Token{}, release(unread(ctx, err))
	}
	secret, err := s.clientSecret(p)
	if err != nil {
		return Token{}, release(err)
	}
	_, refresh, err := s.connectionTokens(row)
	if err != nil {
		return Token{}, release(err)
	}
	rctx, cancel := s.providerContext(ctx)
	tok, err := s.config(p, secret, "").TokenSource(rctx, &oauth2.Token{RefreshToken: refresh}).Token()
	cancel()
	if err != nil {
		err = auth.NewMasker(refresh, secret).Error(err)
		var re *oauth2.RetrieveError
		switch {
		case errors.As(err, &re) && re.ErrorCode == "invalid_grant":
			return Token{}, s.breakRow(ctx, &store.OAuthConnection{ID: row.ID, Version: version, UserID: row.UserID, Provider: row.Provider},
				"the provider refused the refresh token (invalid_grant): connect again")
		case errors.As(err, &re), sentNothing(err):
			return Token{}, release(fmt.Errorf("refresh the %s token: %w", row.Provider, err))
		default:
			return Token{}, s.breakRow(ctx, &store.OAuthConnection{ID: row.ID, Version: version, UserID: row.UserID, Provider: row.Provider},
				"a refresh's answer was lost ("+err.Error()+"): connect again")
		}
	}
	if strings.ContainsAny(tok.AccessToken, "\r\n\x00") || tok.AccessToken == "" {
		return Token{}, s.breakRow(ctx, &store.OAuthConnection{ID: row.ID, Version: version, UserID: row.UserID, Provider: row.Provider},
			"the provider's refresh answer holds no usable access token: connect again")
	}
	newRefresh := cmp.Or(tok.RefreshToken, refresh) // a provider that does not rotate keeps the old one valid
	sa, sr, kid, err := s.sealTokens(row.UserID, row.Provider, tok.AccessToken, newRefresh)
	if err != nil {
		return Token{}, err // the claim expires; the answer is then taken as lost
	}
	upd := store.RefreshedTokens{AccessToken: sa, RefreshToken: sr, KeyID: kid, ExpiresAt: expiry(tok)}
	if granted := grantedScopes(tok); granted != nil {
		upd.Scopes, _ = json.Marshal(granted)
	}
	sctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	err = s.Store.StoreOAuthRefresh(sctx, row.ID, version, owner, upd)
	cancel()
	if err != nil {
		// Not written, not used: the claim expires and the connection
		// is then marked broken.
		return Token{}, fmt.Errorf("the refreshed %s tokens could not be stored, so they are not used: %w", row.Provider, err)
	}
	return Token{Value: tok.AccessToken, version: version + 1}, nil
}

// config is the oauth2 configuration of provider p. Client credentials
// go in the Authorization header, or as client_id in the form for a
// public client, never both ways in turn: x/oauth2's auto-detection
// would resend a request (and a refresh token) after a failure.
func (s *Service) config(p *store.OAuthProvider, secret, redirect string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader
	if secret == "" {
		style = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{
		ClientID: p.ClientID, ClientSecret: secret, RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{AuthURL: p.AuthorizationURL, TokenURL: p.TokenURL, AuthStyle: style},
	}
}

// sentNothing reports whether a token request failed before anything
// reached the provider (no connection, an address the egress policy
// denies): its refresh token is then unspent.
func sentNothing(err error) bool {
	var denied *egress.DeniedError
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &denied) || errors.As(err, &dns) || (errors.As(err, &op) && op.Op == "dial")
}

func expiry(tok *oauth2.Token) *time.Time {
	if tok.Expiry.IsZero() {
		return nil
	}
	t := tok.Expiry.UTC()
	return &t
}

// grantedScopes is the token response's scope (RFC 6749 §5.1), nil when
// absent: the scopes are then those requested. It keeps the scope tokens
// only (validScope): the provider's text is shown on the confirmation
// page, in the console and in a terminal, and asked for again at the next
// connect, so an escape sequence or a bidirectional control there would
// act on whoever reads it; a scope dropped is one not granted.
func grantedScopes(tok *oauth2.Token) []string {
	s, _ := tok.Extra("scope").(string)
	if s == "" {
		return nil
	}
	out := []string{}
	for _, sc := range strings.Fields(s) {
		if validScope(sc) {
			out = append(out, sc)
		}
	}
	return out
}
