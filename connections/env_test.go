package connections_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/connections/oauthtest"
	"github.com/blindexec/blindexec/console"
	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/logbuf"
	"github.com/blindexec/blindexec/store"
)

const (
	adminToken   = "admin-token-0123456789abcdef"
	serviceToken = "service-token-0123456789abcdef"
)

// masterKey is the vault key of every replica in these tests.
var masterKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))

// replica is one engine process: its own executor, connections service
// (and so its own single-flight), change watcher and API handler, over
// the shared database.
type replica struct {
	svc     *connections.Service
	srv     *api.Server
	handler http.Handler
	changes *store.Watcher
}

// env is replicas of the engine behind one address browsers use (a
// round-robin balancer: a flow's start, callback and confirmation land on
// different replicas), a real authorization server (fosite), and an API
// that accepts only tokens fosite issued.
type env struct {
	t        *testing.T
	st       *store.Store
	as       *oauthtest.Server
	api      *httptest.Server
	lb       *httptest.Server
	prefix   string // envOptions.prefix
	replicas []*replica
	logs     *logbuf.Buffer
	keys     *auth.Keyring
	apiHits  atomic.Int64
	// api401 makes the API answer 401 whatever the token (an API refusing
	// for another reason).
	api401 atomic.Bool
	next   atomic.Int64
	// issSupported: envOptions.issSupported
	issSupported bool
}

type envOptions struct {
	replicas   int
	lifespan   time.Duration
	noBrowser  bool // BLINDEXEC_BROWSER_URL unset
	withIssuer bool
	// issSupported registers the provider as its metadata says
	// authorization_response_iss_parameter_supported (RFC 9207).
	issSupported bool
	console      bool // serve the console (its sessions) too
	// prefix is the path BLINDEXEC_BROWSER_URL ends in: a reverse proxy
	// serving the engine under it, stripping it on the way in.
	prefix string
}

func newEnv(t *testing.T, st *store.Store, o envOptions) *env {
	t.Helper()
	e := &env{t: t, st: st, logs: &logbuf.Buffer{}, prefix: o.prefix, issSupported: o.issSupported}
	var err error
	if e.keys, err = auth.ParseKeyring(masterKey, ""); err != nil {
		t.Fatal(err)
	}
	e.lb = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := e.next.Add(1)
		h := e.replicas[int(i)%len(e.replicas)].handler
		if o.prefix != "" {
			h = http.StripPrefix(o.prefix, h)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(e.lb.Close)
	e.as = oauthtest.New(t, oauthtest.Options{RedirectURI: e.lb.URL + o.prefix + connections.CallbackPath, Scopes: []string{"read", "write"},
		AccessTokenLifespan: o.lifespan})
	if o.withIssuer {
		e.as.Issuer = e.as.URL
	}
	// The account a browser signs in as at the provider: its "acct"
	// cookie there (each test browser sets its own).
	e.as.SetAccount(func(r *http.Request) string {
		if c, err := r.Cookie("acct"); err == nil {
			return c.Value
		}
		return "account-1"
	})
	inner := e.as.API()
	t.Cleanup(inner.Close)
	e.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.apiHits.Add(1)
		if e.api401.Load() {
			http.Error(w, `{"error":"insufficient_user_authentication"}`, http.StatusUnauthorized)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/echo") {
			// An API echoing the token it got, in the clear and in base64.
			if _, _, err := e.as.Check(r); err == nil {
				tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				fmt.Fprintf(w, `{"got":%q,"b64":%q}`, tok, base64.StdEncoding.EncodeToString([]byte(tok)))
				return
			}
		}
		inner.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(e.api.Close)
	browser := e.lb.URL + o.prefix
	if o.noBrowser {
		browser = ""
	}
	for range max(o.replicas, 1) {
		e.replicas = append(e.replicas, e.newReplica(browser, o.console))
	}
	return e
}

func (e *env) newReplica(browserURL string, withConsole bool) *replica {
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// idp.test, a name that is not loopback, reaches loopback (tls81).
	d := egresstest.Dialer("127.0.0.0/8,::1/128")
	d.Resolver = egresstest.StubResolver{"idp.test": {netip.MustParseAddr("127.0.0.1")}}
	client := egress.NewClient(d)
	e.t.Cleanup(client.CloseIdleConnections)
	changes := store.NewWatcher(e.st, time.Hour, log)
	changes.Poll(context.Background())
	served := catalog.New(e.st, changes, log)
	rules := auth.NewCatalog(e.st, served, changes)
	creds := auth.NewCredentialService(e.st, e.keys)
	creds.Changes = changes
	ex := engine.NewExecutor(client)
	ex.Credentials, ex.Catalog, ex.Logger = creds, rules, log
	svc := connections.New(e.st, e.keys, client, browserURL)
	svc.Catalog, svc.Logger = rules, log
	svc.Poll = 20 * time.Millisecond
	ex.Connections = svc
	srv := &api.Server{Store: e.st, Catalog: served, Creds: creds, Executor: ex, AdminToken: adminToken, ServiceToken: serviceToken,
		Logger: log, Changes: changes, Connections: svc, HTTPClient: client}
	r := &replica{svc: svc, srv: srv, changes: changes}
	if withConsole {
		c, err := console.New(srv, e.st, masterKey, log)
		if err != nil {
			e.t.Fatal(err)
		}
		r.handler = c.Handler(srv.Handler())
	} else {
		r.handler = srv.Handler()
	}
	return r
}

// poll makes every replica see the latest catalog (serve polls each
// second).
func (e *env) poll() {
	for _, r := range e.replicas {
		if _, err := r.changes.Poll(context.Background()); err != nil {
			e.t.Fatal(err)
		}
	}
}

// do sends a JSON request to the engine's address and decodes the answer.
func (e *env) do(method, path, token string, body any) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.lb.URL+e.prefix+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			e.t.Fatalf("%s %s: %d, not JSON: %s", method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, out
}

// registerProvider registers the fosite server as provider "acme".
func (e *env) registerProvider() {
	e.t.Helper()
	p := map[string]any{"name": "acme", "authorization_url": e.as.URL + "/authorize", "token_url": e.as.URL + "/token",
		"revocation_url": e.as.URL + "/revoke", "scopes": []string{"openid", "read"}, "client_id": oauthtest.ClientID,
		"client_secret": oauthtest.ClientSecret}
	if e.as.Issuer != "" {
		p["issuer"] = e.as.Issuer
	}
	if e.issSupported {
		p["authorization_response_iss_parameter_supported"] = true
	}
	if code, body := e.do("POST", "/v1/oauth/providers", adminToken, p); code != http.StatusOK {
		e.t.Fatalf("register provider: %d %v", code, body)
	}
}

// addPlugin adds the catalog plugin name: GET <api>/me with the user's
// acme connection, needing scopes.
func (e *env) addPlugin(name string, scopes ...string) {
	e.addPluginAt(name, e.api.URL+"/me", scopes...)
}

// addPluginAt adds the catalog plugin name: GET base with the user's acme
// connection, needing scopes.
func (e *env) addPluginAt(name, base string, scopes ...string) {
	e.t.Helper()
	sc, _ := json.Marshal(scopes)
	doc := fmt.Sprintf(`{"name": %q, "description": "who am I at acme", "parameters": {"type": "object", "properties": {}},
		"execution": {"method": "GET", "base_url": %q},
		"auth_config": {"type": "oauth2", "oauth2": {"grant": "authorization_code", "provider": "acme", "scopes": %s}}}`, name, base, sc)
	var body map[string]any
	json.Unmarshal([]byte(doc), &body)
	if code, out := e.do("POST", "/v1/plugins", adminToken, body); code != http.StatusCreated {
		e.t.Fatalf("add plugin: %d %v", code, out)
	}
	e.poll()
}

// redirectTo is a server on its own origin redirecting every request to
// target with status.
func redirectTo(t *testing.T, status int, target string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, status)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// stopAtProvider opens start in b and returns the callback URL the
// provider sent the browser to, unopened.
func (e *env) stopAtProvider(b *browser, start string) *url.URL {
	e.t.Helper()
	b.client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), e.lb.URL+e.prefix+connections.CallbackPath) {
			return http.ErrUseLastResponse
		}
		return nil
	}
	defer func() { b.client.CheckRedirect = nil }()
	resp, err := b.client.Get(start)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	u, err := resp.Location()
	if err != nil {
		e.t.Fatalf("no redirect to the callback: %d", resp.StatusCode)
	}
	return u
}

// call calls a catalog plugin for user.
func (e *env) call(name string, user int64) map[string]any {
	e.t.Helper()
	_, out := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": name, "arguments": map[string]any{}, "user_id": user})
	return out
}

// browser is a person's browser: a cookie jar, following redirects, and
// signed in at the provider as account.
type browser struct {
	t      *testing.T
	client *http.Client
	// last is the URL of the last page reached (the callback's, after a
	// flow), and visited every URL on the way.
	last    string
	visited []string
}

func (e *env) browser(account string) *browser {
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(e.as.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: "acct", Value: account, Path: "/"}})
	b := &browser{t: e.t}
	b.client = &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		b.visited = append(b.visited, req.URL.String())
		return nil
	}}
	return b
}

// get opens u and returns the page's status and text.
func (b *browser) get(u string) (int, string, http.Header) {
	b.t.Helper()
	resp, err := b.client.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	b.last = resp.Request.URL.String()
	return resp.StatusCode, string(body), resp.Header
}

var formField = regexp.MustCompile(`name="(flow|csrf)" value="([^"]*)"`)

var formAction = regexp.MustCompile(`<form method="post" action="([^"]*)"`)

// confirm posts the confirmation form of page with decision, to the
// form's action as a browser resolves it against the page's URL.
func (b *browser) confirm(page, decision string) (int, string) {
	b.t.Helper()
	form := url.Values{"decision": {decision}}
	for _, m := range formField.FindAllStringSubmatch(page, -1) {
		form.Set(m[1], m[2])
	}
	action := formAction.FindStringSubmatch(page)
	if form.Get("flow") == "" || action == nil {
		b.t.Fatalf("no confirmation form in:\n%s", page)
	}
	base, _ := url.Parse(b.last)
	to, err := base.Parse(html.UnescapeString(action[1]))
	if err != nil {
		b.t.Fatal(err)
	}
	return b.postForm(to.String(), form)
}

// postForm posts form to u from the browser and returns the page.
func (b *browser) postForm(u string, form url.Values) (int, string) {
	b.t.Helper()
	resp, err := b.client.PostForm(u, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// authorize asks for a start URL for user.
func (e *env) authorize(user int64, display string) string {
	e.t.Helper()
	code, out := e.do("POST", "/v1/connections/acme/authorize", serviceToken, map[string]any{"user_id": user, "display_name": display})
	if code != http.StatusOK {
		e.t.Fatalf("authorize: %d %v", code, out)
	}
	return out["url"].(string)
}

// connect runs a whole flow for user in a browser signed in at the
// provider as account, and confirms.
func (e *env) connect(user int64, account string) *browser {
	e.t.Helper()
	b := e.browser(account)
	code, page, _ := b.get(e.authorize(user, ""))
	if code != http.StatusOK || !strings.Contains(page, "Connect") {
		e.t.Fatalf("confirmation page: %d\n%s", code, page)
	}
	if code, page := b.confirm(page, "connect"); code != http.StatusOK || !strings.Contains(page, "is connected") {
		e.t.Fatalf("confirm: %d\n%s", code, page)
	}
	return b
}

// tokens returns the user's stored tokens, decrypted (the test's own
// look at the vault, to check they show nowhere).
// expire moves every connection's expiry into the past, as if the
// tokens' life had gone by: the engine judges expiry by its row, so the
// refresh follows at once, however slow the machine (a short lifespan and
// a sleep made "fresh" calls refresh under load). The provider's tokens
// stay valid; a refresh does not need them expired.
func (e *env) expire() {
	e.t.Helper()
	if _, err := e.st.DB().Exec("UPDATE sys_ai_oauth_connection SET expires_at = ?", time.Now().Add(-time.Second).UTC().Truncate(time.Second)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) tokens(user int64) (access, refresh string) {
	e.t.Helper()
	row, err := e.st.GetOAuthConnection(context.Background(), user, "acme")
	if err != nil {
		e.t.Fatal(err)
	}
	if access, err = e.keys.Decrypt(user, "oauth/acme/access_token", row.AccessToken); err != nil {
		e.t.Fatal(err)
	}
	if row.RefreshToken != "" {
		if refresh, err = e.keys.Decrypt(user, "oauth/acme/refresh_token", row.RefreshToken); err != nil {
			e.t.Fatal(err)
		}
	}
	return access, refresh
}

func errorOf(out map[string]any) (code string, details map[string]any) {
	if e, ok := out["error"].(map[string]any); ok {
		code, _ = e["code"].(string)
		details, _ = e["details"].(map[string]any)
	}
	return code, details
}

func outputOf(t *testing.T, out map[string]any) map[string]any {
	t.Helper()
	if out["ok"] != true {
		t.Fatalf("call failed: %v", out)
	}
	o, _ := out["output"].(map[string]any)
	return o
}
