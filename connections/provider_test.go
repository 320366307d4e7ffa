package connections

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

func TestProviderValidate(t *testing.T) {
	ok := `{"name": "acme", "authorization_url": "https://acme.example/authorize", "token_url": "https://acme.example/token", "client_id": "c"}`
	var p Provider
	if err := json.Unmarshal([]byte(ok), &p); err != nil || p.Validate() != nil || !p.PKCE || !p.Enabled {
		t.Fatalf("a valid provider: %+v %v", p, p.Validate())
	}
	for _, tt := range []struct{ doc, field string }{
		{`{"name": "", "authorization_url": "https://a/x", "token_url": "https://a/t", "client_id": "c"}`, "name"},
		{`{"name": "a", "authorization_url": "https://a/x#f", "token_url": "https://a/t", "client_id": "c"}`, "authorization_url"},
		{`{"name": "a", "authorization_url": "https://u:p@a/x", "token_url": "https://a/t", "client_id": "c"}`, "authorization_url"},
		{`{"name": "a", "authorization_url": "https://a/x", "token_url": "/t", "client_id": "c"}`, "token_url"},
		{`{"name": "a", "authorization_url": "https://a/x", "token_url": "https://a/t", "client_id": "c", "revocation_url": "x"}`, "revocation_url"},
		{`{"name": "a", "authorization_url": "https://a/x", "token_url": "https://a/t", "client_id": "c", "scopes": ["a\"b"]}`, "scopes[0]"},
		{`{"name": "a", "authorization_url": "https://a/x", "token_url": "https://a/t", "client_id": "c\n"}`, "client_id"},
		{`{"name": "a", "authorization_url": "https://a/x", "token_url": "https://a/t", "client_id": "c", "extra_params": {"redirect_uri": "x"}}`, "extra_params.redirect_uri"},
		{`{"name": "a", "authorization_url": "https://a/x", "token_url": "https://a/t", "enabled": true}`, "client_id"},
		{`{"name": "a", "authorization_url": "https://a/x", "token_url": "https://a/t", "client_id": "c", "authorization_response_iss_parameter_supported": true}`, "authorization_response_iss_parameter_supported"},
	} {
		var p Provider
		if err := json.Unmarshal([]byte(tt.doc), &p); err != nil {
			t.Fatal(err)
		}
		err := p.Validate()
		inv, isInv := err.(*InvalidProviderError)
		if !isInv || inv.Errors[0].Field != tt.field {
			t.Errorf("%s: %v, want the field %s", tt.doc, err, tt.field)
		}
	}
	var disabled Provider
	json.Unmarshal([]byte(`{"name": "a", "authorization_url": "https://a/x", "token_url": "https://a/t", "enabled": false, "pkce": false}`), &disabled)
	if err := disabled.Validate(); err != nil || disabled.PKCE {
		t.Fatalf("a disabled provider needs no client: %v", err)
	}
}

// FuzzProvider: any document decodes and validates without panicking,
// and a provider Validate accepts has a name fit for a path and a cookie.
func FuzzProvider(f *testing.F) {
	f.Add([]byte(`{"name": "acme", "authorization_url": "https://acme.example/authorize", "token_url": "https://acme.example/token", "client_id": "c", "scopes": ["a"], "extra_params": {"k": "v"}}`))
	f.Add([]byte(`{"name": "a", "authorization_url": "http://[::1]:80/x", "token_url": "https://a/t", "enabled": false}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		var p Provider
		if json.Unmarshal(doc, &p) != nil {
			return
		}
		if p.Validate() == nil && !plugins.ProviderNamePattern.MatchString(p.Name) {
			t.Fatalf("accepted the name %q", p.Name)
		}
	})
}

// FuzzAccountOf: a token answer's id_token is the provider's text: any
// value yields an account string or none, never a panic.
func FuzzAccountOf(f *testing.F) {
	claims := base64.RawURLEncoding.EncodeToString([]byte(`{"sub": "s", "email": "a@b"}`))
	f.Add("h." + claims + ".s")
	f.Add("..")
	f.Add("a.@@@.b")
	f.Fuzz(func(t *testing.T, idt string) {
		tok := (&oauth2.Token{AccessToken: "x"}).WithExtra(map[string]any{"id_token": idt})
		if got := accountOf(tok); strings.Count(idt, ".") != 2 && got != "" {
			t.Fatalf("an account from a malformed id_token: %q", got)
		}
	})
}

// TestRotate: cred rotate re-encrypts provider secrets and connection
// tokens under the new master key; the old one may then go.
func TestRotate(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		oldKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
		newKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
		oldRing, _ := auth.ParseKeyring(oldKey, "")
		svc := New(st, oldRing, nil, "https://ai.example")
		if _, err := svc.PutProvider(ctx, Provider{Name: "acme", AuthorizationURL: "https://a/x", TokenURL: "https://a/t", ClientID: "c",
			ClientSecret: "the-client-secret", PKCE: true, Enabled: true}); err != nil {
			t.Fatal(err)
		}
		sa, sr, kid, err := svc.sealTokens(7, "acme", "access-token-value", "refresh-token-value")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.PutOAuthConnection(ctx, &store.OAuthConnection{UserID: 7, Provider: "acme", AccessToken: sa, RefreshToken: sr, KeyID: kid}); err != nil {
			t.Fatal(err)
		}
		both, _ := auth.ParseKeyring(newKey, oldKey)
		svc.Keys = both
		if n, err := svc.Rotate(ctx); err != nil || n != 2 {
			t.Fatalf("rotate: %d %v", n, err)
		}
		if n, err := svc.Rotate(ctx); err != nil || n != 0 {
			t.Fatalf("rotate again: %d %v", n, err)
		}
		newOnly, _ := auth.ParseKeyring(newKey, "")
		svc.Keys = newOnly
		row, _ := st.GetOAuthProvider(ctx, "acme")
		if secret, err := svc.clientSecret(row); err != nil || secret != "the-client-secret" || row.KeyID != newOnly.MasterKeyID() {
			t.Fatalf("provider secret after rotation: %q %v", secret, err)
		}
		c, _ := st.GetOAuthConnection(ctx, 7, "acme")
		if a, r, err := svc.connectionTokens(c); err != nil || a != "access-token-value" || r != "refresh-token-value" || c.KeyID != newOnly.MasterKeyID() {
			t.Fatalf("tokens after rotation: %v", err)
		}
	})
}

// TestCreateAndMatchProvider: an import creates a provider disabled, with
// no client yet, once per name, and finds one registered by its URLs.
func TestCreateAndMatchProvider(t *testing.T) {
	ctx := context.Background()
	ring, _ := auth.ParseKeyring(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32)), "")
	svc := New(testdb.Open(t, store.DialectSQLite), ring, nil, "")
	p := Provider{Name: "acme", AuthorizationURL: "https://ACME.example/oauth/authorize", TokenURL: "https://acme.example/oauth/token"}
	if got, err := svc.CreateProvider(ctx, p); err != nil || got.Enabled || got.ClientSecretSet {
		t.Fatalf("create: %+v %v", got, err)
	}
	if _, err := svc.CreateProvider(ctx, p); !errors.Is(err, ErrProviderExists) {
		t.Fatalf("create twice: %v", err)
	}
	for _, tt := range []struct {
		auth, token string
		found       bool
	}{
		{"https://acme.example/oauth/authorize/", "https://acme.example/oauth/token", true},
		{"https://acme.example/oauth/authorize", "https://other.example/oauth/token", false},
		{"http://acme.example/oauth/authorize", "https://acme.example/oauth/token", false},
	} {
		got, found, err := svc.MatchProvider(ctx, tt.auth, tt.token)
		if err != nil || found != tt.found || (found && got.Name != "acme") {
			t.Errorf("%s %s: %+v %v %v", tt.auth, tt.token, got, found, err)
		}
	}
	if _, err := svc.Authorize(ctx, 7, "acme", ""); !errors.Is(err, ErrNoBrowserURL) {
		t.Fatalf("authorize without BLINDEXEC_BROWSER_URL: %v", err)
	}
	svc.BrowserURL = "https://ai.example"
	if _, err := svc.Authorize(ctx, 7, "acme", ""); !errors.Is(err, ErrProviderDisabled) {
		t.Fatalf("authorize a disabled provider: %v", err)
	}
	if _, err := svc.Authorize(ctx, 7, "nope", ""); !errors.Is(err, ErrNoProvider) {
		t.Fatalf("authorize an unknown provider: %v", err)
	}
}
