package console_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/connections/oauthtest"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestConnectInBrowser (issue 34 points 3, 5 and 7): chromium drives a
// connection end to end. A user's run pauses because the model called a
// tool of acme, a provider the user has not connected; on the console's
// Approvals page the user clicks Connect: the engine's start URL, fosite's
// authorize endpoint (a real authorization server, in process), the
// callback, and the engine's confirmation page, where the user clicks
// Connect; the tokens are stored for that user. Continue then makes the
// call with them. The Connections page lists the connection (never a
// token), the administrator's lists who is connected to what (and
// registered acme there first), Disconnect revokes the tokens at fosite,
// and Connect on the Connections page goes through the flow again and
// back to that page.
func TestConnectInBrowser(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, "sqlite")
	llm := openaitest.New(t)
	var conns *connections.Service
	key := make([]byte, 32)
	rand.Read(key)
	kr, err := auth.ParseKeyring(base64.StdEncoding.EncodeToString(key), "")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, st, newMasterKey(), func(s *api.Server) {
		conns = connections.New(st, kr, egresstest.Client(t), "")
		conns.Catalog, conns.Logger = s.Executor.Catalog.(*auth.Catalog), s.Logger
		s.Connections, s.Executor.Connections = conns, conns
		s.Runner = &loop.Runner{Client: loop.NewClient(llm.Config()), Executor: s.Executor, DefaultModel: "scripted", LLMTimeout: 5 * time.Second}
	})
	conns.BrowserURL = e.url
	as := oauthtest.New(t, oauthtest.Options{RedirectURI: e.url + connections.CallbackPath, Scopes: []string{"read"}})
	as.Issuer = as.URL // RFC 9207: it sends iss, as registered below
	res := as.API()
	t.Cleanup(res.Close)

	// The administrator registers the provider on the Connections page:
	// the redirect URI to give the provider is shown; the secret never is.
	at := newTab(t)
	at.signIn(e.url, adminToken)
	at.open(e.url, "connections", "connections")
	if uri := at.text("#redirect-uri"); uri != e.url+connections.CallbackPath {
		t.Errorf("the redirect URI shown: %q", uri)
	}
	for id, v := range map[string]string{"name": "acme", "authorization_url": as.URL + "/authorize", "token_url": as.URL + "/token",
		"revocation_url": as.URL + "/revoke", "issuer": as.Issuer, "scopes": "openid", "client_id": oauthtest.ClientID, "client_secret": oauthtest.ClientSecret} {
		at.do(chromedp.SendKeys(chromedp.CSS(`#prov-`+id), v))
	}
	// The checkbox says where its value comes from and what it needs: an
	// administrator meeting RFC 9207 for the first time copies it from the
	// provider's metadata, with the issuer.
	if label := eval[string](at, `document.getElementById('prov-iss_supported').parentElement.textContent`); !strings.Contains(label, "/.well-known/") || !strings.Contains(label, "Issuer") {
		t.Errorf("the iss checkbox's label: %q", label)
	}
	at.do(chromedp.Click(chromedp.CSS(`#prov-iss_supported`)))
	at.do(chromedp.Click(chromedp.CSS(`#provider-form button`)))
	at.wait(`#page[data-ready="true"] #providers`)
	if text := eval[string](at, `document.body.innerHTML`); !strings.Contains(text, "acme") || strings.Contains(text, oauthtest.ClientSecret) {
		t.Errorf("the providers listed: %s", at.text("#providers"))
	}
	at.screenshot("providers")
	if p := apiGet(t, e.url, "/v1/oauth/providers/acme"); p["client_secret_set"] != true || p["enabled"] != true || p["pkce"] != true ||
		p["issuer"] != as.Issuer || p["authorization_response_iss_parameter_supported"] != true {
		t.Errorf("the provider stored: %v", p)
	}

	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	plugin := fmt.Sprintf(`{"name": "acme_me", "description": "who am I at acme", "parameters": {"type": "object", "properties": {}},
		"execution": {"method": "GET", "base_url": %q},
		"auth_config": {"type": "oauth2", "oauth2": {"grant": "authorization_code", "provider": "acme", "scopes": ["read"]}}}`, res.URL+"/me")
	if code, body := do(t, admin, "POST", e.url+"/v1/plugins", csrf, plugin); code != http.StatusCreated {
		t.Fatalf("plugin: %d %v", code, body)
	}
	_, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "console"}`)
	user := tok["token"].(string)

	// RuoYi's run, with the user's token: paused on an authorization.
	llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "acme_me", Arguments: `{}`}}}, openaitest.Turn{Content: "You are account-1 at acme."})
	req, _ := http.NewRequest("POST", e.url+"/v1/runs", strings.NewReader(`{"messages": [{"role": "user", "content": "who am I at acme?"}], "plugin_names": ["acme_me"]}`))
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"kind":"authorization"`) {
		t.Fatalf("the run: %d %s", resp.StatusCode, body)
	}

	tb := newTab(t)
	tb.signIn(e.url, user)
	tb.open(e.url, "approvals", "approvals")
	if text := tb.text("#page"); !strings.Contains(text, "acme_me") || !strings.Contains(text, "waits for an account at acme") {
		t.Fatalf("the Approvals page: %s", text)
	}
	tb.screenshot("connect-approval")
	// Connect: the engine's start URL, fosite, the callback, the
	// confirmation page.
	tb.do(chromedp.Click(chromedp.CSS(`.authorization button.connect`)))
	tb.wait(`form[action="` + connections.ConfirmPath + `"] button[value="connect"]`)
	if text := tb.text("body"); !strings.Contains(text, "account-1") || !strings.Contains(text, "Connect") {
		t.Fatalf("the confirmation page: %s", text)
	}
	tb.screenshot("connect-confirm")
	if _, err := st.GetOAuthConnection(context.Background(), 7, "acme"); err == nil {
		t.Fatal("stored before the user confirmed")
	}
	tb.confirmConnect()
	tb.screenshot("connect-done")
	row, err := st.GetOAuthConnection(context.Background(), 7, "acme")
	if err != nil || row.State != "connected" || row.Account != "account-1" || row.AccessToken == "" {
		t.Fatalf("the connection stored: %+v %v", row, err)
	}

	// Back in the console: Continue makes the call with the new tokens.
	tb.open(e.url, "approvals", "approvals")
	tb.do(chromedp.Click(chromedp.CSS(`.authorization button.continue`)))
	tb.wait(`#page[data-ready="true"] .empty`)
	run := apiGet(t, e.url, "/v1/runs?status=paused")
	if runs := run["runs"].([]any); len(runs) != 0 {
		t.Errorf("still paused: %v", runs)
	}
	if reqs := llm.Requests(); !strings.Contains(string(reqs[len(reqs)-1]), `account-1`) {
		t.Errorf("the model did not read the API's answer: %s", reqs[len(reqs)-1])
	}

	// The Connections page: the user's own, then the administrator's.
	tb.open(e.url, "connections", "connections")
	text := tb.text("#connections")
	if !strings.Contains(text, "acme") || !strings.Contains(text, "account-1") || !strings.Contains(text, "connected") || strings.Contains(text, "ory_at_") {
		t.Errorf("the user's Connections page: %s", text)
	}
	tb.screenshot("connections")
	at.open(e.url, "connections/7", "connections") // filtered by user
	if text := at.text("#connections"); !strings.Contains(text, "7") || !strings.Contains(text, "acme") || !strings.Contains(text, "account-1") {
		t.Errorf("the administrator's Connections page: %s", text)
	}

	// Disconnect: revoked at fosite, gone.
	before := as.Revocations.Load()
	tb.do(chromedp.Click(chromedp.CSS(`#connections button.disconnect`)))
	tb.confirm("Disconnect user 7 from acme")
	tb.wait(`#page[data-ready="true"] .empty`)
	if _, err := st.GetOAuthConnection(context.Background(), 7, "acme"); !errors.Is(err, store.ErrNotFound) || as.Revocations.Load() == before {
		t.Errorf("after Disconnect: %v, %d revocations", err, as.Revocations.Load()-before)
	}

	// Connect again from the Connections page; the page after the
	// confirmation links back to it.
	tb.do(chromedp.Click(chromedp.CSS(`#conn-form button`)))
	tb.wait(`form[action="` + connections.ConfirmPath + `"] button[value="connect"]`)
	tb.confirmConnect()
	tb.do(chromedp.Click(chromedp.CSS(`a[href="/console/#/connections"]`)))
	tb.waitPage("connections")
	if text := tb.text("#connections"); !strings.Contains(text, "acme") || !strings.Contains(text, "account-1") {
		t.Errorf("the Connections page after connecting again: %s", text)
	}
}

// confirmConnect clicks Connect on the engine's confirmation page and
// waits for the page saying the account is connected.
func (tb *tab) confirmConnect() {
	tb.t.Helper()
	tb.do(chromedp.Click(chromedp.CSS(`button[value="connect"]`)))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		// Read between navigations: an error is a page not there yet.
		done, err := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`document.body !== null && document.body.innerText.includes("is connected")`, chromedp.EvalAsValue))
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("the page after Connect: %s", tb.text("body"))
		}
	}
}
