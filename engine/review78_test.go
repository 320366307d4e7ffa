package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/plugins"
)

// TestHomographIsAnotherOrigin (review78): the catalog sends TOKEN to
// http://api.example; a plugin that is no catalog row (the MCP proxy's
// tool without one) at http://apİ.example was taken to send it there
// too (the origin lower-cased), while the client dials
// xn--api-bec.example, another host: it was sent the user's TOKEN.
func TestHomographIsAnotherOrigin(t *testing.T) {
	up := newUpstream(t, nil)
	u, _ := url.Parse(up.URL)
	port := u.Port()
	d := egresstest.Dialer("127.0.0.0/8")
	loop := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	d.Resolver = egresstest.StubResolver{"api.example": loop, "xn--api-bec.example": loop}
	// Both listed, so that the key's origin rule, not the plaintext one
	// (tls81), is what refuses the lookalike.
	d.Plaintext, _ = egress.ParsePlaintextHosts("api.example,xn--api-bec.example")
	const doc = `{"name":"NAME","description":"Reads items.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/items"},"auth_config":{"type":"bearer","token":"TOKEN"}}`
	row := mustPlugin(t, strings.ReplaceAll(doc, "NAME", "items"), "http://api.example:"+port)
	look := mustPlugin(t, strings.ReplaceAll(doc, "NAME", "look"), "http://apİ.example:"+port)
	const secret = "stored-token-0123456789"
	client := egress.NewClient(d)
	t.Cleanup(client.CloseIdleConnections)
	h := NewExecutor(client)
	h.Catalog = rowCatalog{"items": row}
	h.Credentials = everyKey(secret)
	_, err := h.Execute(t.Context(), Call{Plugin: look, Owner: OwnerService, UserID: 7, Arguments: json.RawMessage(`{"q":"x"}`)})
	for _, hit := range up.Hits() {
		if strings.Contains(hit.Header.Get("Authorization"), secret) {
			t.Fatalf("%s was sent the catalog's TOKEN (%v)", hit.Host, err)
		}
	}
	if refused, ok := errors.AsType[*RefusedError](err); !ok || refused.Code != CodeCredentialNotBound || !strings.Contains(refused.Message, "xn--api-bec.example") {
		t.Fatalf("the lookalike's call: %v, want credential_not_bound naming the host dialed", err)
	}
	// The catalog's own origin, written in Unicode or not, is the row's.
	if res, err := h.Execute(t.Context(), Call{Plugin: row, Owner: OwnerService, UserID: 7, Arguments: json.RawMessage(`{"q":"x"}`)}); err != nil || !res.OK {
		t.Fatalf("the row's call: %+v %v", res, err)
	}
}

// TestClientTokenGoesWhereTheCatalogSendsIt (review78): an oauth2 client's
// id and secret go to its token URL, and the token they buy goes to the
// API. The rule placed the client's keys at the token URL alone, so a
// plugin that is no catalog row (the proxy's tool of a lookalike server)
// with the catalog's token URL and the catalog's client keys passed: the
// engine bought a token with the user's client secret and sent it to the
// lookalike, which could call the API as the user until it expired.
func TestClientTokenGoesWhereTheCatalogSendsIt(t *testing.T) {
	up, lookalike := newUpstream(t, nil), newUpstream(t, nil)
	const accessToken = "at-bought-with-the-users-secret-0123"
	idp := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"`+accessToken+`","token_type":"bearer","expires_in":3600}`)
	})
	const doc = `{"name":"NAME","description":"Reads items.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/items"},
	  "auth_config":{"type":"oauth2","oauth2":{"grant":"client_credentials","token_url":"TOKEN_URL/token","client_id":"CLIENT_ID","client_secret":"CLIENT_SECRET"}}}`
	plugin := func(name, base string) *plugins.Plugin {
		return mustPlugin(t, strings.NewReplacer("NAME", name, "TOKEN_URL", idp.URL).Replace(doc), base)
	}
	row := plugin("items", up.URL)
	h := newHarness(t)
	h.Catalog = rowCatalog{"items": row}
	h.Credentials = storeFunc(func(_ context.Context, _ int64, keys []string) (map[string]string, error) {
		return map[string]string{"CLIENT_ID": "client-7", "CLIENT_SECRET": "client-secret-0123456789"}, nil
	})
	_, err := h.Execute(t.Context(), Call{Plugin: plugin("look", lookalike.URL), Owner: OwnerService, UserID: 7, Arguments: json.RawMessage(`{"q":"x"}`)})
	for _, hit := range lookalike.Hits() {
		if strings.Contains(hit.Header.Get("Authorization"), accessToken) {
			t.Fatalf("the lookalike was sent the token bought with the user's client secret (%v)", err)
		}
	}
	if refused, ok := errors.AsType[*RefusedError](err); !ok || refused.Code != CodeCredentialNotBound {
		t.Fatalf("the lookalike's call: %v, want credential_not_bound", err)
	}
	if len(idp.Hits()) != 0 {
		t.Errorf("the token URL was asked for a token the call could not send (%d requests)", len(idp.Hits()))
	}
	// Another plugin of the row's API and token URL is the catalog's way.
	if res, err := h.Execute(t.Context(), Call{Plugin: plugin("other", up.URL), Owner: OwnerService, UserID: 7, Arguments: json.RawMessage(`{"q":"x"}`)}); err != nil || !res.OK {
		t.Fatalf("a plugin of the row's API: %+v %v", res, err)
	}
}
