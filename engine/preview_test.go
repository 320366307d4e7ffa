package engine

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/plugins"
)

// TestSetAtSend: what a person approves names each part the auth config
// adds at send time once, and only what is sent. A bearer whose single
// mapping entry names its token sends one Authorization header; the
// preview listed the entry's target besides (a second Authorization, or a
// header never sent), as a newcomer saw on a paused run (newcomer74).
func TestSetAtSend(t *testing.T) {
	entry := func(source, target, location string) plugins.AuthMapping {
		return plugins.AuthMapping{Source: source, Target: target, Location: location}
	}
	for _, tc := range []struct {
		name string
		cfg  plugins.AuthConfig
		want []string
	}{
		{"bearer from its mapping", plugins.AuthConfig{Type: plugins.AuthBearer,
			Mapping: []plugins.AuthMapping{entry("DESK_TOKEN", "Authorization", "header")}}, []string{"Authorization"}},
		{"bearer from a mapping naming another header", plugins.AuthConfig{Type: plugins.AuthBearer,
			Mapping: []plugins.AuthMapping{entry("DESK_TOKEN", "X-Desk", "header")}}, []string{"Authorization"}},
		{"bearer token with an extra header", plugins.AuthConfig{Type: plugins.AuthBearer, Token: "T",
			Mapping: []plugins.AuthMapping{entry("TENANT", "X-Tenant", "")}}, []string{"Authorization", "X-Tenant"}},
		{"api key in a header, a query and a cookie", plugins.AuthConfig{Type: plugins.AuthAPIKey,
			Mapping: []plugins.AuthMapping{entry("A", "Token", "header"), entry("B", "key", plugins.InQuery), entry("C", "sid", plugins.InCookie)}},
			[]string{"Token", "?key", "Cookie: sid"}},
		{"basic", plugins.AuthConfig{Type: plugins.AuthBasic, Username: "U", Password: "P"}, []string{"Authorization"}},
		{"none", plugins.AuthConfig{Type: plugins.AuthNone}, nil},
	} {
		var got []string
		for _, h := range setAtSend(tc.cfg) {
			if h.Value != SetAtSend || !h.Credential {
				t.Errorf("%s: %+v is not marked set at send", tc.name, h)
			}
			got = append(got, h.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPreviewHidesStaticSecrets (onerow81): a key the administrator wrote
// into the plugin itself — base_url's query, execution.query, a static
// execution.headers value — is no credential, and the preview a person
// approves showed it whole. The person sees what the call does (its
// method and override, origin, path, the model's arguments), not those.
func TestPreviewHidesStaticSecrets(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, staticSecretsPlugin, up.URL)
	h := newHarness(t)
	plan, err := h.Decide(t.Context(), Call{Plugin: p, Policy: confirm.Always, Arguments: json.RawMessage(`{"id":"42","q":"find-me"}`)})
	if err != nil || plan.Verdict() != VerdictPerson {
		t.Fatalf("verdict %d: %v", plan.Verdict(), err)
	}
	hidesStaticSecrets(t, "the preview", plan.Person.Request, up.URL)
	if res, err := h.Send(t.Context(), approved(plan)); err != nil || !res.OK || len(up.Hits()) != 1 {
		t.Fatalf("the approved call: %v %s", err, resultJSON(t, res))
	}
	if got := up.Hits()[0]; got.Header.Get("X-Api-Key") != staticInHeader || !strings.Contains(got.RequestURI, "api_key="+staticInURL) {
		t.Errorf("sent %s %v: the static secrets are the upstream's", got.RequestURI, got.Header)
	}
}

// The static secrets of staticSecretsPlugin (a format taking the
// upstream's URL): in its base_url, its execution.query and its headers.
const (
	staticInURL    = "qk-Static-4411"
	staticInQuery  = "eq-Static-5522"
	staticInHeader = "hk-Static-6633"
	staticInAuth   = "Basic c3RhdGljOnNlY3JldA=="

	staticSecretsPlugin = `{"name":"find","description":"d","parameters":{"type":"object","properties":{"id":{"type":"string"},"q":{"type":"string"}}},
	  "execution":{"method":"POST","base_url":"%s/v1/items/{id}?tenant=acme&api_key=` + staticInURL + `",
	    "query":{"access_token":"` + staticInQuery + `","v":"2"},
	    "headers":{"X-Api-Key":"` + staticInHeader + `","Authorization":"` + staticInAuth + `","X-HTTP-Method-Override":"PATCH"}}}`
)

// hidesStaticSecrets checks that req, staticSecretsPlugin's call with
// {"id":"42","q":"find-me"} as what names it shows it, says what the call
// does and none of the plugin's static secrets.
func hidesStaticSecrets(t *testing.T, what string, req *SentRequest, upstream string) {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	shown := string(b)
	for _, secret := range []string{staticInURL, staticInQuery, staticInHeader, staticInAuth} {
		if strings.Contains(shown, secret) {
			t.Errorf("%s shows the plugin's static secret %s: %s", what, secret, shown)
		}
	}
	if req.Method != "POST" || !strings.HasPrefix(req.URL, upstream+"/v1/items/42?tenant=acme&api_key=") ||
		!strings.Contains(req.URL, "v=2") || !strings.Contains(req.Body, "find-me") {
		t.Errorf("%s does not say what the call does: %s %s", what, req.Method, req.URL)
	}
	headers := map[string]SentHeader{}
	for _, h := range req.Headers {
		headers[h.Name] = h
	}
	for _, name := range []string{"X-Api-Key", "Authorization"} {
		if h := headers[name]; !h.Credential {
			t.Errorf("%s: header %s: %+v, want shown as a credential", what, name, h)
		}
	}
	if h := headers["X-Http-Method-Override"]; h.Value != "PATCH" {
		t.Errorf("%s: the method override: %+v, want PATCH shown", what, h)
	}
}

// approved is plan approved by user 7.
func approved(plan *Plan) *Plan {
	plan.Approve("user:7", "p1")
	return plan
}
