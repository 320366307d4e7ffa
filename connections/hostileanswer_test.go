package connections_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/connections/oauthtest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestHostileGrantedScopes: a token endpoint's "scope" is the provider's
// text, shown on the confirmation page, in the console and by `blindexec
// oauth connections` in a terminal, and asked for again at the next
// connect. Only scope tokens (RFC 6749 §3.3: printable ASCII without
// spaces, quotes or backslashes) are kept, at the code's exchange and at
// a refresh: before, an escape sequence the provider put there (an OSC 52
// clipboard write, a cursor move hiding the listing's other rows) or a
// bidirectional override was stored and shown as sent.
func TestHostileGrantedScopes(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	hostile := []string{"\x1b]52;c;cHduZWQ=\x07", "\x1b[2A\x1b[2K", "\u202eetirw", "wr\u200bite", "a\x00b", "\"quoted\"", `back\slash`, "日本"}
	// The provider's token endpoint, its answers' scope rewritten.
	token := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequest("POST", e.as.URL+"/token", bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			w.WriteHeader(resp.StatusCode)
			json.NewEncoder(w).Encode(out)
			return
		}
		out["scope"] = "read " + strings.Join(hostile, " ")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(token.Close)
	p := map[string]any{"name": "acme", "authorization_url": e.as.URL + "/authorize", "token_url": token.URL,
		"revocation_url": e.as.URL + "/revoke", "scopes": []string{"openid", "read"}, "client_id": oauthtest.ClientID,
		"client_secret": oauthtest.ClientSecret}
	if code, body := e.do("POST", "/v1/oauth/providers", adminToken, p); code != http.StatusOK {
		t.Fatalf("register provider: %d %v", code, body)
	}
	e.addPlugin("me", "read")
	b := e.browser("account-1")
	code, page, _ := b.get(e.authorize(7, ""))
	if code != http.StatusOK {
		t.Fatalf("confirmation page: %d\n%s", code, page)
	}
	clean := func(where, s string) {
		t.Helper()
		for _, h := range hostile {
			if strings.Contains(s, h) || strings.Contains(s, strings.Trim(h, "\x1b\x07")) {
				t.Errorf("%s holds the provider's %q", where, h)
			}
		}
	}
	clean("the confirmation page", page)
	if !strings.Contains(page, "<code>read</code>") {
		t.Errorf("the confirmation page does not show the scope granted:\n%s", page)
	}
	if code, page := b.confirm(page, "connect"); code != http.StatusOK {
		t.Fatalf("confirm: %d\n%s", code, page)
	}
	stored := func(when string) {
		t.Helper()
		_, out := e.do("GET", "/v1/connections?user_id=7", serviceToken, nil)
		raw, _ := json.Marshal(out)
		clean("the connection "+when, string(raw))
		conns, _ := out["connections"].([]any)
		if len(conns) != 1 {
			t.Fatalf("connections %s: %v", when, out)
		}
		if sc, _ := conns[0].(map[string]any)["scopes"].([]any); len(sc) != 1 || sc[0] != "read" {
			t.Errorf("scopes %s = %q, want [read]", when, sc)
		}
	}
	stored("after connecting")
	e.expire()
	outputOf(t, e.call("me", 7))
	stored("after a refresh")
}
