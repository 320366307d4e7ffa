package api_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/connections/oauthtest"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// connectEnv is an engine whose users connect accounts at a real
// authorization server (fosite, connections/oauthtest) registered as
// provider "acme", and the catalog plugin acme_me (GET <api>/me with the
// user's acme connection, scope read) on fosite's resource server.
type connectEnv struct {
	*env
	as    *oauthtest.Server
	api   *upstream
	conns *connections.Service
}

// withConnections gives the server a connections service; its browser
// URL is set once the server listens (newConnectEnv).
func withConnections(t testing.TB, svc **connections.Service) func(*api.Server) {
	return func(s *api.Server) {
		key := make([]byte, 32)
		rand.Read(key)
		kr, err := auth.ParseKeyring(base64.StdEncoding.EncodeToString(key), "")
		if err != nil {
			t.Fatal(err)
		}
		c := connections.New(s.Store, kr, egresstest.Client(t), "")
		c.Catalog, c.Logger = s.Executor.Catalog.(*auth.Catalog), s.Logger
		s.Executor.Connections, s.Connections, *svc = c, c, c
	}
}

func newConnectEnv(t *testing.T, st *store.Store, opts ...func(*api.Server)) *connectEnv {
	var svc *connections.Service
	e := &connectEnv{env: newEnv(t, st, append([]func(*api.Server){withConnections(t, &svc)}, opts...)...)}
	e.conns = svc
	e.conns.BrowserURL = e.url // BLINDEXEC_BROWSER_URL
	e.as = oauthtest.New(t, oauthtest.Options{RedirectURI: e.url + connections.CallbackPath, Scopes: []string{"read", "write"}})
	res := e.as.API()
	t.Cleanup(res.Close)
	e.api = newUpstream(t, res.Config.Handler.ServeHTTP)
	if code, body := e.do("POST", "/v1/oauth/providers", adminToken, map[string]any{"name": "acme",
		"authorization_url": e.as.URL + "/authorize", "token_url": e.as.URL + "/token", "revocation_url": e.as.URL + "/revoke",
		"scopes": []string{"openid"}, "client_id": oauthtest.ClientID, "client_secret": oauthtest.ClientSecret}); code != http.StatusOK {
		t.Fatalf("register provider: %d %v", code, body)
	}
	plugin := fmt.Sprintf(`{"name": "acme_me", "description": "who am I at acme", "parameters": {"type": "object", "properties": {}},
		"execution": {"method": "GET", "base_url": %q},
		"auth_config": {"type": "oauth2", "oauth2": {"grant": "authorization_code", "provider": "acme", "scopes": ["read"]}}}`, e.api.URL+"/me")
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		t.Fatalf("add plugin: %d %v", code, body)
	}
	return e
}

// pendingOf is a paused reply's only pending item.
func pendingOf(t *testing.T, reply map[string]any) map[string]any {
	t.Helper()
	p, _ := reply["pending"].([]any)
	if reply["status"] != "paused" || len(p) != 1 {
		t.Fatalf("want a run paused on one item: %v", reply)
	}
	return p[0].(map[string]any)
}

// TestRunPausesForAConnection (issue 34 point 5): the model calls a tool
// of a provider the user has not connected; the run pauses on an item of
// kind authorization (provider, scopes, missing scopes, a start URL) and
// nothing is sent. "continue" before the user connected pauses again
// with a fresh URL; after the user connected (the start URL followed
// through fosite and confirmed), "continue" makes the call with the
// user's token and the model goes on. "cancel" tells the model the user
// did not connect; an authorization takes no approve.
func TestRunPausesForAConnection(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		llm := openaitest.New(t)
		e := newConnectEnv(t, st, withModel(llm))
		ask := func(final string) {
			llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "acme_me", Arguments: `{}`}}}, openaitest.Turn{Content: final})
		}
		run := map[string]any{"user_id": 7, "messages": []map[string]string{{"role": "user", "content": "Who am I at acme?"}},
			"plugin_names": []string{"acme_me"}}

		ask("You are account-1.")
		code, reply := e.do("POST", "/v1/runs", serviceToken, run)
		if code != http.StatusOK {
			t.Fatalf("run: %d %v", code, reply)
		}
		item := pendingOf(t, reply)
		url, _ := item["url"].(string)
		if item["kind"] != "authorization" || item["tool"] != "acme_me" || item["provider"] != "acme" ||
			fmt.Sprint(item["scopes"]) != "[read]" || fmt.Sprint(item["missing_scopes"]) != "[read]" ||
			!strings.HasPrefix(url, e.url+connections.StartPath) || item["request"] != nil || item["expires_at"] == nil {
			t.Fatalf("the authorization item: %v", item)
		}
		if n := len(e.api.received()); n != 0 {
			t.Fatalf("%d requests reached the API before the user connected", n)
		}
		runID := reply["run_id"].(string)
		resume := func(id, decision string) (int, map[string]any) {
			return e.do("POST", "/v1/runs/"+runID+"/resume", serviceToken, map[string]any{"decisions": []map[string]string{{"id": id, "decision": decision}}})
		}
		if code, body := resume(item["id"].(string), "approve"); code != http.StatusBadRequest ||
			!strings.Contains(fmt.Sprint(body["error"]), `decisions[0].decision: expected "continue" or "cancel"`) {
			t.Errorf("approve on an authorization: %d %v", code, body)
		}

		// Not connected yet: "continue" pauses again on a fresh item.
		code, again := resume(item["id"].(string), "continue")
		next := pendingOf(t, again)
		if code != http.StatusOK || next["kind"] != "authorization" || next["id"] == item["id"] || next["url"] == url {
			t.Fatalf("continue before connecting: %d %v", code, again)
		}
		if it, err := st.GetPendingItem(t.Context(), item["id"].(string)); err != nil || it.Status != "continued" || it.DecidedBy != "service" {
			t.Errorf("the first item: %+v %v", it, err)
		}
		if n := len(e.api.received()); n != 0 {
			t.Fatalf("%d requests reached the API before the user connected", n)
		}

		// The user opens the URL RuoYi showed, signs in at acme and
		// confirms; then RuoYi resumes.
		e.as.Browser(t, "account-1").Connect(next["url"].(string))
		code, done := resume(next["id"].(string), "continue")
		if code != http.StatusOK || done["status"] != "completed" {
			t.Fatalf("continue after connecting: %d %v", code, done)
		}
		sent := e.api.received()
		if len(sent) != 1 || !strings.HasPrefix(sent[0].header.Get("Authorization"), "Bearer ") {
			t.Fatalf("the API received %+v", sent)
		}
		steps := done["steps"].([]any)
		last := steps[len(steps)-1].(map[string]any)
		if d, _ := last["decision"].(map[string]any); last["status"] != "ok" || d["outcome"] != "continued" || d["by"] != "service" {
			t.Errorf("the step: %v", last)
		}
		reqs := llm.Requests()
		if model := string(reqs[len(reqs)-1]); !strings.Contains(model, `account-1`) {
			t.Errorf("the model did not read the API's answer: %s", model)
		}
		token := strings.TrimPrefix(sent[0].header.Get("Authorization"), "Bearer ")
		for _, r := range reqs {
			if strings.Contains(string(r), token) {
				t.Error("the access token reached the model")
			}
			// The start URLs went to the caller, never to the model
			// (issue 44 point 6).
			if strings.Contains(string(r), connections.StartPath) {
				t.Errorf("a start URL reached the model: %s", r)
			}
		}
		if strings.Contains(fmt.Sprint(done), token) {
			t.Error("the access token is in the reply")
		}

		// Connected: the next run calls at once.
		ask("Still account-1.")
		if code, reply := e.do("POST", "/v1/runs", serviceToken, run); code != http.StatusOK || reply["status"] != "completed" || len(e.api.received()) != 2 {
			t.Fatalf("a run of a connected user: %d %v", code, reply)
		}

		// User 8 cancels: the model reads that the user did not connect.
		ask("I cannot without your acme account.")
		run["user_id"] = 8
		_, reply = e.do("POST", "/v1/runs", serviceToken, run)
		item = pendingOf(t, reply)
		runID = reply["run_id"].(string)
		code, done = resume(item["id"].(string), "cancel")
		if code != http.StatusOK || done["status"] != "completed" || len(e.api.received()) != 2 {
			t.Fatalf("cancel: %d %v", code, done)
		}
		reqs = llm.Requests()
		if model := string(reqs[len(reqs)-1]); !strings.Contains(model, `not_connected`) ||
			!strings.Contains(model, "the user did not connect an account at acme") {
			t.Errorf("the model was not told: %s", model)
		}
	})
}

// TestConnectThenConfirm: under the default confirmation policy, a
// consequential tool of a provider the user has not connected asks to
// connect first (nothing can be shown before there is a token to send),
// then, after "continue", for the confirmation of the exact request;
// approved, it is sent once with the user's token.
func TestConnectThenConfirm(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		llm := openaitest.New(t)
		e := newConnectEnv(t, st, withConfirmingModel(llm))
		plugin := fmt.Sprintf(`{"name": "acme_post", "description": "post a note at acme", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
			"execution": {"method": "POST", "base_url": %q},
			"auth_config": {"type": "oauth2", "oauth2": {"grant": "authorization_code", "provider": "acme", "scopes": ["write"]}}}`, e.api.URL+"/notes")
		if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
			t.Fatalf("add plugin: %d %v", code, body)
		}
		llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "acme_post", Arguments: `{"text":"hi"}`}}}, openaitest.Turn{Content: "Posted."})
		_, reply := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": 7, "plugin_names": []string{"acme_post"},
			"messages": []map[string]string{{"role": "user", "content": "Post hi at acme."}}})
		item := pendingOf(t, reply)
		if item["kind"] != "authorization" || fmt.Sprint(item["scopes"]) != "[write]" {
			t.Fatalf("first: %v", item)
		}
		runID := reply["run_id"].(string)
		resume := func(id, decision string) map[string]any {
			t.Helper()
			code, out := e.do("POST", "/v1/runs/"+runID+"/resume", serviceToken, map[string]any{"decisions": []map[string]string{{"id": id, "decision": decision}}})
			if code != http.StatusOK {
				t.Fatalf("resume %s: %d %v", decision, code, out)
			}
			return out
		}
		e.as.Browser(t, "account-1").Connect(item["url"].(string))
		confirmation := pendingOf(t, resume(item["id"].(string), "continue"))
		req, _ := confirmation["request"].(map[string]any)
		if confirmation["kind"] != "confirmation" || req["method"] != "POST" || req["url"] != e.api.URL+"/notes" || len(e.api.received()) != 0 {
			t.Fatalf("after connecting: %v, %d sent", confirmation, len(e.api.received()))
		}
		if h := fmt.Sprint(req["headers"]); !strings.Contains(h, "Authorization") || !strings.Contains(h, "(set at send time)") || strings.Contains(h, "ory_at_") {
			t.Errorf("the prepared request's headers: %s", h)
		}
		done := resume(confirmation["id"].(string), "approve")
		sent := e.api.received()
		if done["status"] != "completed" || len(sent) != 1 || sent[0].method != "POST" || !strings.HasPrefix(sent[0].header.Get("Authorization"), "Bearer ory_at_") {
			t.Fatalf("approved: %v, sent %+v", done, sent)
		}
	})
}
