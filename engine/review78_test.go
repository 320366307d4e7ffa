package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
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
	const doc = `{"name":"NAME","description":"Reads items.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/items"},"auth_config":{"type":"bearer","token":"TOKEN"}}`
	row := mustPlugin(t, strings.ReplaceAll(doc, "NAME", "items"), "http://api.example:"+port)
	look := mustPlugin(t, strings.ReplaceAll(doc, "NAME", "look"), "http://apİ.example:"+port)
	const secret = "stored-token-0123456789"
	client := egress.NewClient(d)
	t.Cleanup(client.CloseIdleConnections)
	h := NewExecutor(client)
	h.Catalog = rowCatalog{"items": row}
	h.Credentials = storeFunc(func(_ context.Context, _ int64, keys []string) (map[string]string, error) {
		out := map[string]string{}
		for _, k := range keys {
			out[k] = secret
		}
		return out, nil
	})
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
