// Package oauthtest is a test kit: a real OAuth 2.0 authorization server
// on loopback, github.com/ory/fosite composed with every handler enabled
// (compose.ComposeAllEnabled) over its own in-memory storage
// (storage.MemoryStore), both unmodified. Refresh-token rotation and reuse
// detection are fosite's code: a refresh revokes the refresh token and
// access token it replaces, and a refresh token used twice revokes the
// whole grant. The kit adds only what a real server's operator adds: the
// login (the account a browser signs in as, with consent to every scope
// asked), a resource check for test APIs (introspection), and counters of
// the requests it answered.
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/storage"
	"github.com/ory/fosite/token/jwt"
)

// Client credentials of the kit's one registered client.
const (
	ClientID     = "blindexec-test"
	ClientSecret = "blindexec-test-client-secret-0123456789"
)

// Server is the authorization server. Its endpoints are
// <URL>/authorize, /token and /revoke.
type Server struct {
	*httptest.Server
	Provider fosite.OAuth2Provider
	Store    *storage.MemoryStore
	// Issuer, when set, is sent as the authorization response's iss
	// (RFC 9207).
	Issuer string

	// Exchanges counts authorization-code requests that reached fosite;
	// Refreshes refresh-token requests; Refreshed those it answered with
	// new tokens; Revocations the revocation requests.
	Exchanges, Refreshes, Refreshed, Revocations atomic.Int64

	// storeMu works around a race inside fosite v0.49.0's MemoryStore:
	// RevokeRefreshToken (a revocation, and every refresh's rotation)
	// writes RefreshTokens under refreshTokenRequestIDsMutex, not the
	// refreshTokensMutex its readers take. Requests that may write it
	// hold storeMu; token checks read under it. What is tested is the
	// engine's concurrency, which arrives here unchanged (the counters
	// are taken before the lock).
	storeMu sync.RWMutex

	mu      sync.Mutex
	account func(*http.Request) string
	// dropRefreshAnswers: that many refreshes are processed by fosite
	// (the tokens rotate) and their answers then lost (the connection is
	// closed unanswered), as when the client dies waiting.
	dropRefreshAnswers int
}

// Options configure New.
type Options struct {
	// RedirectURI is the client's one registered redirect URI (exact
	// match).
	RedirectURI string
	// Scopes the client may ask for.
	Scopes []string
	// AccessTokenLifespan defaults to an hour.
	AccessTokenLifespan time.Duration
	// Public registers a public client (no secret; PKCE carries it).
	Public bool
}

// New starts the server; it closes with the test.
func New(t interface {
	Helper()
	Cleanup(func())
	Fatalf(string, ...any)
}, o Options) *Server {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("oauthtest: %v", err)
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	cfg := &fosite.Config{
		AccessTokenLifespan:         o.AccessTokenLifespan,
		GlobalSecret:                secret,
		HashCost:                    4, // bcrypt's least: the client secret's check is not under test
		RefreshTokenScopes:          []string{},
		EnforcePKCEForPublicClients: true,
	}
	st := storage.NewMemoryStore()
	client := &fosite.DefaultClient{
		ID: ClientID, RedirectURIs: []string{o.RedirectURI}, Scopes: append([]string{"openid"}, o.Scopes...),
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}, Public: o.Public,
	}
	if !o.Public {
		hashed, err := (&fosite.BCrypt{Config: cfg}).Hash(context.Background(), []byte(ClientSecret))
		if err != nil {
			t.Fatalf("oauthtest: %v", err)
		}
		client.Secret = hashed
	}
	st.Clients[ClientID] = client
	s := &Server{Provider: compose.ComposeAllEnabled(cfg, st, key), Store: st}
	s.account = func(*http.Request) string { return "account-1" }
	mux := http.NewServeMux()
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /revoke", s.revoke)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// SetAccount sets how the server tells which account a browser signs in
// as (its login): by default "account-1" for everyone.
func (s *Server) SetAccount(f func(*http.Request) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.account = f
}

// DropRefreshAnswers makes the next n refreshes lose their answer after
// fosite rotated the tokens.
func (s *Server) DropRefreshAnswers(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropRefreshAnswers = n
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ar, err := s.Provider.NewAuthorizeRequest(ctx, r)
	if err != nil {
		s.Provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	s.mu.Lock()
	acct := s.account(r)
	s.mu.Unlock()
	for _, sc := range ar.GetRequestedScopes() {
		ar.GrantScope(sc) // the user consents to everything asked
	}
	resp, err := s.Provider.NewAuthorizeResponse(ctx, ar, newSession(acct, s.URL))
	if err != nil {
		s.Provider.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	if s.Issuer != "" {
		resp.AddParameter("iss", s.Issuer)
	}
	s.Provider.WriteAuthorizeResponse(ctx, w, ar, resp)
}

func newSession(subject, issuer string) *openid.DefaultSession {
	return &openid.DefaultSession{
		Subject: subject, Username: subject,
		Claims:  &jwt.IDTokenClaims{Subject: subject, Issuer: issuer, IssuedAt: time.Now(), AuthTime: time.Now(), Extra: map[string]any{"preferred_username": subject}},
		Headers: &jwt.Headers{},
	}
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	refresh := false
	if err := r.ParseForm(); err == nil {
		switch r.PostForm.Get("grant_type") {
		case "refresh_token":
			refresh = true
			s.Refreshes.Add(1)
		case "authorization_code":
			s.Exchanges.Add(1)
		}
	}
	s.storeMu.Lock()
	ar, err := s.Provider.NewAccessRequest(ctx, r, newSession("", s.URL))
	if err != nil {
		s.storeMu.Unlock()
		s.Provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	for _, sc := range ar.GetRequestedScopes() {
		ar.GrantScope(sc)
	}
	resp, err := s.Provider.NewAccessResponse(ctx, ar)
	s.storeMu.Unlock()
	if err != nil {
		s.Provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	if refresh {
		s.Refreshed.Add(1)
		s.mu.Lock()
		drop := s.dropRefreshAnswers > 0
		if drop {
			s.dropRefreshAnswers--
		}
		s.mu.Unlock()
		if drop {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
	}
	s.Provider.WriteAccessResponse(ctx, w, ar, resp)
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	s.Revocations.Add(1)
	s.storeMu.Lock()
	err := s.Provider.NewRevocationRequest(r.Context(), r)
	s.storeMu.Unlock()
	s.Provider.WriteRevocationResponse(r.Context(), w, err)
}

// Check is a resource server's check of a request's bearer token: the
// account it was granted by and its scopes, or an error (revoked,
// expired, unknown).
func (s *Server) Check(r *http.Request) (account string, scopes []string, err error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", nil, fmt.Errorf("no bearer token")
	}
	s.storeMu.RLock()
	_, ar, err := s.Provider.IntrospectToken(r.Context(), tok, fosite.AccessToken, newSession("", s.URL))
	s.storeMu.RUnlock()
	if err != nil {
		return "", nil, err
	}
	return ar.GetSession().GetSubject(), ar.GetGrantedScopes(), nil
}

// API returns a resource server for tests: it answers 401 to a request
// whose token Check refuses, else 200 with {"account", "scopes", "path"}.
func (s *Server) API() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		acct, scopes, err := s.Check(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"account":%q,"scopes":%q,"path":%q}`, acct, strings.Join(scopes, " "), r.URL.Path)
	}))
}
