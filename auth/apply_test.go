package auth_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/plugins"
)

var applyCreds = map[string]string{
	"QCC_KEY":    "qcc-key-1",
	"QCC_SECRET": "qcc secret+/=&2",
	"TOKEN":      "tok-abcdef",
	"USER":       "alice",
	"PASS":       "pa:ss word",
	"AT":         "access-token-9",
}

func newApplyRequest(t *testing.T, rawURL string) *http.Request {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, rawURL, nil)
	req.Header.Set("Cookie", "lang=en")
	return req
}

func TestApply(t *testing.T) {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pa:ss word"))
	tests := []struct {
		name    string
		cfg     plugins.AuthConfig
		url     string
		wantURL string
		header  map[string]string
		headers []string // Applied.Headers
		secrets []string // must be among Applied.Secrets
		// notSecrets must not be: identifiers are ordinary data on their own
		notSecrets []string
	}{{
		name: "api_key header (seed 001)",
		cfg: plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{
			{Source: "QCC_KEY", Target: "Token", Location: "header"},
			{Source: "QCC_SECRET", Target: "Timespan"}, // location defaults to header
		}},
		header:  map[string]string{"Token": "qcc-key-1", "Timespan": "qcc secret+/=&2"},
		headers: []string{"Token", "Timespan"},
		secrets: []string{"qcc-key-1", "qcc secret+/=&2"},
	}, {
		name: "api_key header with prefix",
		cfg: plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{
			{Source: "QCC_KEY", Target: "x-api-key", Prefix: "Key "},
		}},
		header:  map[string]string{"X-Api-Key": "Key qcc-key-1"},
		headers: []string{"X-Api-Key"},
	}, {
		name: "api_key query, escaped, other parameters kept byte for byte, a clashing one replaced",
		cfg: plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{
			{Source: "QCC_SECRET", Target: "api key", Location: "query", Prefix: "p:"},
		}},
		url:     "http://api.example/s?ids=1,2&z=%41&api+key=llm-supplied&a=1",
		wantURL: "http://api.example/s?ids=1,2&z=%41&a=1&api+key=p%3Aqcc+secret%2B%2F%3D%262",
		secrets: []string{"qcc secret+/=&2"},
	}, {
		name: "api_key query on a URL without one",
		cfg: plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{
			{Source: "QCC_KEY", Target: "key", Location: "query"},
		}},
		url:     "http://api.example/s",
		wantURL: "http://api.example/s?key=qcc-key-1",
	}, {
		name: "api_key cookie, appended, quoted when it holds a space",
		cfg: plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{
			{Source: "QCC_KEY", Target: "sid", Location: "cookie"},
			{Source: "QCC_SECRET", Target: "sec", Location: "cookie"},
		}},
		header:  map[string]string{"Cookie": `lang=en; sid=qcc-key-1; sec="qcc secret+/=&2"`},
		headers: []string{"Cookie"},
	}, {
		// A cookie of its name already there (an argument's) is replaced:
		// servers read the first of two (realspec80).
		name: "api_key cookie, a clashing one replaced",
		cfg: plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{
			{Source: "QCC_KEY", Target: "lang", Location: "cookie"},
		}},
		header:  map[string]string{"Cookie": "lang=qcc-key-1"},
		headers: []string{"Cookie"},
	}, {
		name:    "bearer",
		cfg:     plugins.AuthConfig{Type: plugins.AuthBearer, Token: "TOKEN", Mapping: []plugins.AuthMapping{{Source: "QCC_KEY", Target: "X-Org"}}},
		header:  map[string]string{"Authorization": "Bearer tok-abcdef", "X-Org": "qcc-key-1"},
		headers: []string{"X-Org", "Authorization"},
		secrets: []string{"tok-abcdef", "qcc-key-1"},
	}, {
		name:    "bearer from the single mapping entry",
		cfg:     plugins.AuthConfig{Type: plugins.AuthBearer, Mapping: []plugins.AuthMapping{{Source: "TOKEN", Target: "X-Not-Used"}}},
		header:  map[string]string{"Authorization": "Bearer tok-abcdef", "X-Not-Used": ""},
		headers: []string{"Authorization"},
	}, {
		name:    "basic",
		cfg:     plugins.AuthConfig{Type: plugins.AuthBasic, Username: "USER", Password: "PASS"},
		header:  map[string]string{"Authorization": basic},
		headers: []string{"Authorization"},
		secrets: []string{"pa:ss word", "alice:pa:ss word"},
		// The username is an identifier: only the pair carries it.
		notSecrets: []string{"alice"},
	}, {
		name: "a mapping entry marked not secret",
		cfg: plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{
			{Source: "QCC_KEY", Target: "Token"}, {Source: "USER", Target: "X-Tenant", Secret: new(false)},
		}},
		header:     map[string]string{"Token": "qcc-key-1", "X-Tenant": "alice"},
		headers:    []string{"Token", "X-Tenant"},
		secrets:    []string{"qcc-key-1"},
		notSecrets: []string{"alice"},
	}, {
		name:    "oauth2 access_token",
		cfg:     plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{AccessToken: "AT"}},
		header:  map[string]string{"Authorization": "Bearer access-token-9"},
		headers: []string{"Authorization"},
		secrets: []string{"access-token-9"},
	}, {
		name:   "none",
		cfg:    plugins.AuthConfig{Type: plugins.AuthNone},
		header: map[string]string{"Authorization": "", "Cookie": "lang=en"},
	}}
	a := auth.NewAuthenticator(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.url == "" {
				tt.url = "http://api.example/s?q=1"
			}
			req := newApplyRequest(t, tt.url)
			got, err := a.Apply(t.Context(), tt.cfg, applyCreds, req)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantURL != "" && req.URL.String() != tt.wantURL {
				t.Errorf("URL = %s\n want %s", req.URL, tt.wantURL)
			}
			for k, v := range tt.header {
				if req.Header.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, req.Header.Get(k), v)
				}
			}
			if !reflect.DeepEqual(got.Headers, tt.headers) {
				t.Errorf("Applied.Headers = %q, want %q", got.Headers, tt.headers)
			}
			for _, s := range tt.secrets {
				if !slices.Contains(got.Secrets, s) {
					t.Errorf("Applied.Secrets = %q, lacks %q", got.Secrets, s)
				}
			}
			for _, s := range tt.notSecrets {
				if slices.Contains(got.Secrets, s) {
					t.Errorf("Applied.Secrets = %q, holds the identifier %q", got.Secrets, s)
				}
			}
			// Whatever was injected, the Masker built from Secrets hides it.
			m := auth.NewMasker(got.Secrets...)
			for _, s := range []string{req.URL.String(), req.Header.Get("Authorization"), req.Header.Get("Token"), req.Header.Get("Cookie")} {
				for _, k := range []string{"QCC_KEY", "QCC_SECRET", "TOKEN", "USER", "PASS", "AT"} {
					if v := applyCreds[k]; len(v) >= auth.MinMaskLen && strings.Contains(m.String(s), v) {
						t.Errorf("masked %q still holds %s", m.String(s), k)
					}
				}
			}
		})
	}
}

func TestApplyRejects(t *testing.T) {
	keyMapping := func(loc string) plugins.AuthConfig {
		return plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{{Source: "K", Target: "T", Location: loc}}}
	}
	tests := []struct {
		name  string
		cfg   plugins.AuthConfig
		creds map[string]string
		is    error
		msg   string
	}{
		{"CR LF in a header value", keyMapping("header"), map[string]string{"K": "v\r\nX-Injected: 1"}, auth.ErrCredentialValue, "credential K"},
		{"LF in a query value", keyMapping("query"), map[string]string{"K": "v\nx"}, auth.ErrCredentialValue, "credential K"},
		{"NUL in a bearer token", plugins.AuthConfig{Type: plugins.AuthBearer, Token: "K"}, map[string]string{"K": "v\x00"}, auth.ErrCredentialValue, "credential K"},
		{"CR in a basic password", plugins.AuthConfig{Type: plugins.AuthBasic, Username: "U", Password: "K"}, map[string]string{"U": "uuuu", "K": "pppp\r"}, auth.ErrCredentialValue, "credential K"},
		{"semicolon in a cookie", keyMapping("cookie"), map[string]string{"K": "a; admin=1"}, auth.ErrCookieValue, "credential K"},
		{"CR LF in a prefix", plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{{Source: "K", Target: "T", Prefix: "x\r\n"}}}, map[string]string{"K": "vvvv"}, auth.ErrCredentialValue, "prefix"},
		{"bad header name", plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{{Source: "K", Target: "X Bad:"}}}, map[string]string{"K": "vvvv"}, nil, "not a valid header name"},
		{"bad location", keyMapping("path"), map[string]string{"K": "vvvv"}, nil, `location "path"`},
		{"colon in a basic user", plugins.AuthConfig{Type: plugins.AuthBasic, Username: "U", Password: "K"}, map[string]string{"U": "aa:bb", "K": "pppp"}, nil, "credential U"},
		{"unknown type", plugins.AuthConfig{Type: "digest"}, nil, nil, `unknown type "digest"`},
		{"oauth2 unknown grant", plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{Grant: "password"}}, nil, nil, `unknown grant "password"`},
		{"oauth2 without its object", plugins.AuthConfig{Type: plugins.AuthOAuth2}, nil, nil, "oauth2 object"},
	}
	a := auth.NewAuthenticator(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newApplyRequest(t, "http://api.example/s?q=1")
			before := req.Clone(t.Context())
			_, err := a.Apply(t.Context(), tt.cfg, tt.creds, req)
			if err == nil {
				t.Fatal("Apply succeeded")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %q, want it to mention %q", err, tt.msg)
			}
			for _, v := range tt.creds {
				if strings.Contains(err.Error(), strings.TrimSpace(v)) {
					t.Errorf("err = %q shows a credential value", err)
				}
			}
			if !reflect.DeepEqual(req.Header, before.Header) || req.URL.String() != before.URL.String() {
				t.Errorf("request changed on error: %v %s", req.Header, req.URL)
			}
		})
	}
}

func TestApplyMissingCredentials(t *testing.T) {
	cfg := plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{
		{Source: "QCC_SECRET", Target: "Timespan"},
		{Source: "QCC_KEY", Target: "Token"},
		{Source: "PRESENT", Target: "P"},
	}}
	req := newApplyRequest(t, "http://api.example/")
	_, err := auth.NewAuthenticator(nil).Apply(t.Context(), cfg, map[string]string{"PRESENT": "present-value", "QCC_KEY": ""}, req)
	var me *auth.MissingCredentialsError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want *MissingCredentialsError", err)
	}
	if !reflect.DeepEqual(me.Keys, []string{"QCC_KEY", "QCC_SECRET"}) || err.Error() != "missing credentials: QCC_KEY, QCC_SECRET" {
		t.Errorf("err = %q, keys %q", err, me.Keys)
	}
	if req.Header.Get("P") != "" {
		t.Error("request changed despite the error")
	}
}

func BenchmarkApplyAPIKey(b *testing.B) {
	cfg := plugins.AuthConfig{Type: plugins.AuthAPIKey, Mapping: []plugins.AuthMapping{
		{Source: "QCC_KEY", Target: "Token"}, {Source: "QCC_SECRET", Target: "key", Location: "query"},
	}}
	a := auth.NewAuthenticator(nil)
	req := httptest.NewRequest(http.MethodGet, "http://api.example/s?keyword=acme&page=1", nil)
	for b.Loop() {
		r := *req
		u := *req.URL
		r.URL, r.Header = &u, http.Header{}
		if _, err := a.Apply(b.Context(), cfg, applyCreds, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// Stripe's imported basic auth: the secret key is the user name and the
// password is empty. An empty password present is a credential, the user
// name is then the call's secret (masked, held to a secret's length), and
// an absent password is still missing.
func TestApplyBasicEmptyPassword(t *testing.T) {
	cfg := plugins.AuthConfig{Type: plugins.AuthBasic, Username: "STRIPE_KEY", Password: "STRIPE_PASSWORD"}
	a := auth.NewAuthenticator(nil)
	tests := []struct {
		name    string
		creds   map[string]string
		header  string
		secret  string // among Applied.Secrets
		missing []string
		short   bool
	}{
		{name: "empty password", creds: map[string]string{"STRIPE_KEY": "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "STRIPE_PASSWORD": ""},
			header: "Basic " + base64.StdEncoding.EncodeToString([]byte("sk_test_4eC39HqLyjWDarjtT1zdp7dc:")), secret: "sk_test_4eC39HqLyjWDarjtT1zdp7dc"},
		{name: "password absent", creds: map[string]string{"STRIPE_KEY": "sk_test_4eC39HqLyjWDarjtT1zdp7dc"}, missing: []string{"STRIPE_PASSWORD"}},
		{name: "user name too short to mask", creds: map[string]string{"STRIPE_KEY": "sk", "STRIPE_PASSWORD": ""}, short: true},
		{name: "user name empty too", creds: map[string]string{"STRIPE_KEY": "", "STRIPE_PASSWORD": ""}, missing: []string{"STRIPE_KEY"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newApplyRequest(t, "https://api.stripe.com/v1/customers")
			applied, err := a.Apply(t.Context(), cfg, tt.creds, req)
			var me *auth.MissingCredentialsError
			switch {
			case tt.missing != nil:
				if !errors.As(err, &me) || !reflect.DeepEqual(me.Keys, tt.missing) {
					t.Fatalf("err = %v, want missing %v", err, tt.missing)
				}
				return
			case tt.short:
				if !auth.IsSecretTooShort(err) || !strings.Contains(err.Error(), "STRIPE_KEY") {
					t.Fatalf("err = %v, want the user name refused for its length", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got := req.Header.Get("Authorization"); got != tt.header {
				t.Errorf("Authorization = %q, want %q", got, tt.header)
			}
			if !slices.Contains(applied.Secrets, tt.secret) || slices.Contains(applied.Secrets, "") {
				t.Errorf("secrets = %q, want the user name among them and no empty one", applied.Secrets)
			}
			// The one masker of the call: the identifiers the auth config
			// names, the derived secrets Apply returned.
			m := auth.MaskerFor(cfg.IdentifierKeys(), tt.creds, applied.Secrets...)
			echo := "user " + tt.secret + " sent " + req.Header.Get("Authorization")
			if got := m.String(echo); strings.Contains(got, tt.secret) || strings.Contains(got, tt.header[len("Basic "):]) {
				t.Errorf("masked %q", got)
			}
		})
	}
}
