package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/plugins"
)

// tokenServer is a real OAuth2 token endpoint on loopback that issues
// "at-1", "at-2", ... and records what each request carried.
type tokenServer struct {
	*httptest.Server
	hits      atomic.Int32
	expiresIn int           // 0: no expires_in
	gate      chan struct{} // when set, each request waits for it to close
	fail      bool          // answer 401, echoing the client secret

	mu   sync.Mutex
	last *http.Request // the last request, its form parsed
}

func newTokenServer(t *testing.T, expiresIn int) *tokenServer {
	ts := &tokenServer{expiresIn: expiresIn}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ts.gate != nil {
			<-ts.gate
		}
		r.ParseForm()
		ts.mu.Lock()
		ts.last = r
		ts.mu.Unlock()
		n := ts.hits.Add(1)
		if ts.fail {
			_, secret, _ := r.BasicAuth()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":"invalid_client","error_description":"bad secret %s"}`, secret)
			return
		}
		resp := map[string]any{"access_token": fmt.Sprintf("at-%d", n), "token_type": "bearer"}
		if ts.expiresIn > 0 {
			resp["expires_in"] = ts.expiresIn
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) lastRequest() *http.Request {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.last
}

func oauth2Config(tokenURL string) plugins.AuthConfig {
	return plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{
		TokenURL: tokenURL, ClientID: "CID", ClientSecret: "CSECRET",
		Scopes: []string{"read", "write"}, Audience: "https://api.example",
	}}
}

var oauth2Creds = map[string]string{"CID": "client-1", "CSECRET": "client-secret-1"}

// fakeClock is a settable clock for token expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestAuthenticator(t *testing.T) (*auth.Authenticator, *fakeClock) {
	a := auth.NewAuthenticator(egresstest.Client(t))
	clock := &fakeClock{t: time.Now()}
	a.SetClock(clock.now)
	return a, clock
}

// applyBearer runs Apply and returns the Authorization header it set.
func applyBearer(t *testing.T, a *auth.Authenticator, cfg plugins.AuthConfig, creds map[string]string) (string, auth.Applied) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://api.example/", nil)
	applied, err := a.Apply(t.Context(), cfg, creds, req)
	if err != nil {
		t.Fatal(err)
	}
	return req.Header.Get("Authorization"), applied
}

func TestOAuth2ClientCredentialsCacheRefreshInvalidate(t *testing.T) {
	ts := newTokenServer(t, 1)
	a, clock := newTestAuthenticator(t)
	cfg := oauth2Config(ts.URL + "/token")
	steps := []struct {
		name  string
		do    func()
		creds map[string]string
		want  string
		hits  int32
	}{
		{"first call fetches", nil, oauth2Creds, "Bearer at-1", 1},
		{"second call uses the cache", nil, oauth2Creds, "Bearer at-1", 1},
		{"before expiry still cached", func() { clock.advance(800 * time.Millisecond) }, oauth2Creds, "Bearer at-1", 1},
		{"after expiry refreshed", func() { clock.advance(time.Second) }, oauth2Creds, "Bearer at-2", 2},
		{"invalidate forces a fetch", func() { a.Invalidate(cfg, oauth2Creds) }, oauth2Creds, "Bearer at-3", 3},
		{"another credential set has its own token", nil, map[string]string{"CID": "client-1", "CSECRET": "other-secret"}, "Bearer at-4", 4},
		{"the first set is still cached", nil, oauth2Creds, "Bearer at-3", 4},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		got, applied := applyBearer(t, a, cfg, s.creds)
		if got != s.want || ts.hits.Load() != s.hits {
			t.Fatalf("%s: Authorization %q, endpoint hits %d; want %q, %d", s.name, got, ts.hits.Load(), s.want, s.hits)
		}
		token := strings.TrimPrefix(got, "Bearer ")
		if !slices.Contains(applied.Secrets, token) || !slices.Contains(applied.Secrets, s.creds["CSECRET"]) {
			t.Errorf("%s: Applied.Secrets %q lacks the token or the client secret", s.name, applied.Secrets)
		}
		if !slices.Equal(applied.Headers, []string{"Authorization"}) {
			t.Errorf("%s: Applied.Headers = %q", s.name, applied.Headers)
		}
	}
	r := ts.lastRequest()
	id, secret, ok := r.BasicAuth()
	if !ok || id != "client-1" || secret != "other-secret" { // the last fetch was for the other set
		t.Errorf("token request basic auth = %q, %q, %v", id, secret, ok)
	}
	if r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("scope") != "read write" ||
		r.PostForm.Get("audience") != "https://api.example" || r.PostForm.Has("client_secret") {
		t.Errorf("token request form = %v", r.PostForm)
	}
}

func TestOAuth2NoExpiryCachedUntilInvalidated(t *testing.T) {
	ts := newTokenServer(t, 0)
	a, clock := newTestAuthenticator(t)
	cfg := oauth2Config(ts.URL)
	applyBearer(t, a, cfg, oauth2Creds)
	clock.advance(24 * time.Hour)
	if got, _ := applyBearer(t, a, cfg, oauth2Creds); got != "Bearer at-1" || ts.hits.Load() != 1 {
		t.Fatalf("%q after %d hits, want the cached at-1", got, ts.hits.Load())
	}
	a.Invalidate(cfg, oauth2Creds)
	if got, _ := applyBearer(t, a, cfg, oauth2Creds); got != "Bearer at-2" {
		t.Fatalf("after Invalidate: %q", got)
	}
}

func TestOAuth2AuthStyleParams(t *testing.T) {
	ts := newTokenServer(t, 3600)
	a, _ := newTestAuthenticator(t)
	cfg := oauth2Config(ts.URL)
	cfg.OAuth2.AuthStyle = "params"
	applyBearer(t, a, cfg, oauth2Creds)
	r := ts.lastRequest()
	if _, _, ok := r.BasicAuth(); ok || r.PostForm.Get("client_id") != "client-1" || r.PostForm.Get("client_secret") != "client-secret-1" {
		t.Errorf("token request: basic auth %v, form %v", ok, r.PostForm)
	}
}

// Concurrent calls for one credential set share one fetch.
func TestOAuth2ConcurrentCallsFetchOnce(t *testing.T) {
	ts := newTokenServer(t, 3600)
	ts.gate = make(chan struct{})
	a, _ := newTestAuthenticator(t)
	cfg := oauth2Config(ts.URL)
	var wg sync.WaitGroup
	got := make([]string, 16)
	for i := range got {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodGet, "http://api.example/", nil)
			if _, err := a.Apply(context.Background(), cfg, oauth2Creds, req); err != nil {
				t.Error(err)
			}
			got[i] = req.Header.Get("Authorization")
		})
	}
	time.Sleep(50 * time.Millisecond) // let the callers pile up on the fetch
	close(ts.gate)
	wg.Wait()
	if ts.hits.Load() != 1 {
		t.Errorf("endpoint hit %d times", ts.hits.Load())
	}
	for i, g := range got {
		if g != "Bearer at-1" {
			t.Errorf("caller %d: %q", i, g)
		}
	}
}

// A caller whose context ends stops waiting; the shared fetch goes on and
// serves the next caller.
func TestOAuth2CallerCancel(t *testing.T) {
	ts := newTokenServer(t, 3600)
	ts.gate = make(chan struct{})
	a, _ := newTestAuthenticator(t)
	cfg := oauth2Config(ts.URL)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err := a.Apply(ctx, cfg, oauth2Creds, httptest.NewRequest(http.MethodGet, "http://api.example/", nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	close(ts.gate)
	if got, _ := applyBearer(t, a, cfg, oauth2Creds); got != "Bearer at-1" || ts.hits.Load() != 1 {
		t.Errorf("%q after %d hits, want the in-flight fetch's at-1", got, ts.hits.Load())
	}
}

func TestOAuth2EndpointErrorMaskedNotCached(t *testing.T) {
	ts := newTokenServer(t, 3600)
	ts.fail = true
	a, _ := newTestAuthenticator(t)
	cfg := oauth2Config(ts.URL)
	for i := range 2 {
		_, err := a.Apply(t.Context(), cfg, oauth2Creds, httptest.NewRequest(http.MethodGet, "http://api.example/", nil))
		if err == nil {
			t.Fatal("Apply succeeded against a failing endpoint")
		}
		if strings.Contains(err.Error(), "client-secret-1") || !strings.Contains(err.Error(), auth.Redacted) {
			t.Errorf("err = %q: the echoed secret is not masked", err)
		}
		if ts.hits.Load() != int32(i+1) {
			t.Errorf("call %d: %d hits, a failure must not be cached", i, ts.hits.Load())
		}
	}
}

// The token endpoint is reached through the egress-guarded client: an
// internal token_url is refused like any other call, with the client
// given and with NewAuthenticator's default (the URL is a loopback
// literal, so even a broken guard would send nothing off the machine).
func TestOAuth2TokenURLDeniedByEgress(t *testing.T) {
	ts := newTokenServer(t, 3600)
	guarded := egress.NewClient(egresstest.Dialer("")) // default policy: loopback denied
	t.Cleanup(guarded.CloseIdleConnections)
	for name, client := range map[string]*http.Client{"given": guarded, "default": nil} {
		a := auth.NewAuthenticator(client)
		_, err := a.Apply(t.Context(), oauth2Config(ts.URL), oauth2Creds, httptest.NewRequest(http.MethodGet, "http://api.example/", nil))
		var de *egress.DeniedError
		if !errors.As(err, &de) || ts.hits.Load() != 0 {
			t.Errorf("%s client: err = %v (hits %d), want *egress.DeniedError", name, err, ts.hits.Load())
		}
	}
}
