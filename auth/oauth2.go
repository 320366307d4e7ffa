package auth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
)

const (
	// tokenFetchTimeout bounds one token request. The fetch is detached
	// from the caller's context, since concurrent callers share it.
	tokenFetchTimeout = 30 * time.Second
	// maxRefreshSkew is how long before expiry a cached token is replaced:
	// it must still be valid when the upstream checks it.
	maxRefreshSkew = 10 * time.Second
	// maxCachedTokens bounds the cache (one entry per credential set).
	maxCachedTokens = 4096
)

// tokenKey identifies a credential set: a hash, so that the secret is not
// kept as a map key (it would show in heap dumps and debuggers as such).
type tokenKey [sha256.Size]byte

// tokenEntry is one cached token, or one fetch in flight when done is
// open. Its fields are written once, before done is closed. A failed
// fetch is not fresh: the next call replaces it with a new fetch.
type tokenEntry struct {
	done      chan struct{}
	token     string
	refreshAt time.Time // zero: the endpoint gave no expiry
	err       error
}

func (e *tokenEntry) fresh(now time.Time) bool {
	select {
	case <-e.done:
		return e.err == nil && (e.refreshAt.IsZero() || now.Before(e.refreshAt))
	default:
		return true // in flight: wait for it
	}
}

func clientCredentialsKey(o *plugins.OAuth2, id, secret string) tokenKey {
	h := sha256.New()
	for _, f := range []string{o.TokenURL, id, secret, o.Audience, o.AuthStyle} {
		writeField(h, f)
	}
	for _, s := range o.Scopes {
		writeField(h, s)
	}
	return tokenKey(h.Sum(nil))
}

// writeField writes s length-prefixed, so that no two field lists hash
// alike ("a|b","c" vs "a","b|c").
func writeField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// clientCredentialsToken returns a cached token for the credential set or
// fetches one. Concurrent callers for one set share a single fetch; each
// waits only as long as its own context allows.
func (a *Authenticator) clientCredentialsToken(ctx context.Context, o *plugins.OAuth2, id, secret string) (string, error) {
	key := clientCredentialsKey(o, id, secret)
	a.mu.Lock()
	e := a.tokens[key]
	if e == nil || !e.fresh(a.now()) {
		e = &tokenEntry{done: make(chan struct{})}
		a.evictLocked()
		a.tokens[key] = e
		go a.fetch(context.WithoutCancel(ctx), e, o, id, secret)
	}
	a.mu.Unlock()
	select {
	case <-e.done:
		return e.token, e.err
	case <-ctx.Done():
		return "", fmt.Errorf("oauth2 token from %s: %w", redact.URL(o.TokenURL), context.Cause(ctx))
	}
}

func (a *Authenticator) fetch(ctx context.Context, e *tokenEntry, o *plugins.OAuth2, id, secret string) {
	defer close(e.done)
	ctx, cancel := context.WithTimeout(ctx, tokenFetchTimeout)
	defer cancel()
	conf := &clientcredentials.Config{
		ClientID:     id,
		ClientSecret: secret,
		TokenURL:     o.TokenURL,
		Scopes:       o.Scopes,
		AuthStyle:    oauth2.AuthStyleInHeader,
	}
	if o.AuthStyle == "params" {
		conf.AuthStyle = oauth2.AuthStyleInParams
	}
	if o.Audience != "" {
		conf.EndpointParams = url.Values{"audience": {o.Audience}}
	}
	// The client secret travels in the request: never in plain text past
	// loopback and the operator's list (egress.PlaintextError).
	ctx = context.WithValue(egress.WithCredentials(ctx, nil), oauth2.HTTPClient, a.client)
	start := a.now()
	tok, err := conf.Token(ctx)
	switch {
	case err != nil:
		e.err = fmt.Errorf("oauth2 token from %s: %w", redact.URL(o.TokenURL), err)
	case strings.ContainsAny(tok.AccessToken, "\r\n\x00"):
		e.err = fmt.Errorf("oauth2 token from %s: access token: %w", redact.URL(o.TokenURL), ErrCredentialValue)
	default:
		e.token = tok.AccessToken
		if !tok.Expiry.IsZero() {
			// The oauth2 package stamps Expiry with the real clock; keep the
			// lifetime and count it on ours.
			life := time.Until(tok.Expiry)
			e.refreshAt = start.Add(life - min(maxRefreshSkew, life/10))
		}
	}
}

// evictLocked makes room for one entry: expired entries go first, then
// arbitrary ones.
func (a *Authenticator) evictLocked() {
	if len(a.tokens) < maxCachedTokens {
		return
	}
	now := a.now()
	for k, e := range a.tokens {
		if !e.fresh(now) {
			delete(a.tokens, k)
		}
	}
	for k := range a.tokens {
		if len(a.tokens) < maxCachedTokens {
			break
		}
		delete(a.tokens, k)
	}
}

// Invalidate forgets the token cached for cfg and creds, so that the next
// Apply fetches a new one: the executor calls it when the upstream answers
// 401 with a cached token. It does nothing for other auth types.
func (a *Authenticator) Invalidate(cfg plugins.AuthConfig, creds map[string]string) {
	o := cfg.OAuth2
	if cfg.Type != plugins.AuthOAuth2 || o == nil || o.EffectiveGrant() != plugins.GrantClientCredentials {
		return
	}
	key := clientCredentialsKey(o, creds[o.ClientID], creds[o.ClientSecret])
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.tokens[key]; e != nil {
		select {
		case <-e.done:
			delete(a.tokens, key)
		default:
			// A fetch in flight is already a new token.
		}
	}
}
